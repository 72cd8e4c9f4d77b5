#include "base/json_ivalue.h"

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <string>

namespace loom::base {

c10::IValue JsonToIValue(const nlohmann::ordered_json& j) {
  using json = nlohmann::ordered_json;
  switch (j.type()) {
    case json::value_t::boolean:
      return j.get<bool>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return j.get<int64_t>();
    case json::value_t::number_float:
      return j.get<double>();
    case json::value_t::string:
      return j.get<std::string>();
    case json::value_t::array: {
      c10::impl::GenericList list(c10::AnyType::get());
      for (const auto& e : j) list.push_back(JsonToIValue(e));
      return list;
    }
    case json::value_t::object: {
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [k, v] : j.items()) dict.insert(k, JsonToIValue(v));
      return dict;
    }
    default:
      return c10::IValue();
  }
}

}  // namespace loom::base
