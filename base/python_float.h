// Python's repr() of a float, so files and messages loom writes spell numbers exactly as
// Python does (json.dumps, str(dict), argparse defaults): the shortest digits that round-trip
// (std::to_chars, like Python's dtoa), fixed notation when the decimal exponent is in
// [-4, 16), else d.ddde±XX with at least two exponent digits; integral values get ".0";
// "nan", "inf", "-inf" for the non-finite ones (json.dumps writes NaN / Infinity instead:
// callers that write JSON map those themselves).
//
// Example:
//   PythonFloatRepr(5e-05) == "5e-05";  PythonFloatRepr(3.0) == "3.0";
//   PythonFloatRepr(1e16) == "1e+16";   PythonFloatRepr(0.0001) == "0.0001"
#ifndef LOOM_BASE_PYTHON_FLOAT_H_
#define LOOM_BASE_PYTHON_FLOAT_H_

#include <string>

namespace loom::base {

std::string PythonFloatRepr(double x);

}  // namespace loom::base

#endif  // LOOM_BASE_PYTHON_FLOAT_H_
