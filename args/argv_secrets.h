// HideSecretArgs: blanks the values of token flags (--hub_token, --push_to_hub_token, --token,
// any --*_token; "--flag value" and "--flag=value") in the process's own argv, so that `ps`
// and /proc/<pid>/cmdline stop showing them (hub tokens). Call it right after the arguments were
// parsed (the parser keeps its own copies). The memory /proc reads is argv's, so the values are
// overwritten in place with '*' (same length); what the process showed before the call (while
// its libraries loaded) cannot be taken back: HF_TOKEN or the token file keep a token off the
// command line entirely.
//
// Example:
//   RETURN_IF_ERROR(parser.Parse(argc, argv));
//   loom::args::HideSecretArgs(argc, argv);
#ifndef LOOM_ARGS_ARGV_SECRETS_H_
#define LOOM_ARGS_ARGV_SECRETS_H_

namespace loom::args {

// The number of values blanked.
int HideSecretArgs(int argc, char** argv);

}  // namespace loom::args

#endif  // LOOM_ARGS_ARGV_SECRETS_H_
