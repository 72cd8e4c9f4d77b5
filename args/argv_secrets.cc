#include "args/argv_secrets.h"

#include <cstring>
#include <string>

namespace loom::args {
namespace {

// The parser takes dashes for underscores (--hub-token), so this does too.
bool IsTokenFlag(std::string name) {
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name == "token" ||
         (name.size() > 6 && name.compare(name.size() - 6, 6, "_token") == 0);
}

void Blank(char* s) {
  for (; *s != '\0'; ++s) *s = '*';
}

}  // namespace

int HideSecretArgs(int argc, char** argv) {
  int hidden = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (!IsTokenFlag(name)) continue;
    if (eq != std::string::npos) {
      Blank(argv[i] + eq + 1);
      ++hidden;
    } else if (i + 1 < argc) {
      Blank(argv[++i]);
      ++hidden;
    }
  }
  return hidden;
}

}  // namespace loom::args
