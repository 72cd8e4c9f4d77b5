"""loom_fuzzer(): a libFuzzer binary (clang 14, ASan + UBSan) for one parser, and its smoke test.

Contract:
  * `:<name>_fuzzer_bin` is a genrule whose output, `:<name>_fuzzer`, is the fuzzing binary: it
    runs Debian's /usr/bin/clang++-14 with -fsanitize=fuzzer,address,undefined and
    -fno-sanitize-recover=undefined (every UBSan report is fatal) on `harness` and on every `.cc`
    file of `srcs` in one command, since the project's Bazel toolchain is gcc. List the headers
    those sources include in `srcs` too: they are the action's inputs. Includes resolve against
    the workspace root (-I.).
  * `protos`: .proto files compiled by Debian's /usr/bin/protoc inside the same action into a
    temporary folder that is added to -I; their .pb.cc files are compiled in as well (list each
    imported .proto too). Give `-lprotobuf` in `libs` then.
  * `libs`: extra compiler/linker words (e.g. "-lyaml-cpp", "-licuuc -licudata",
    "-I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10"). Debian's abseil
    libraries that loom's Status and string code needs are always linked.
  * `:<name>_seeds` is a filegroup of `seeds` (real files of the format, checked in under
    `<name>_corpus/`), and `:<name>_fuzz_smoke_test` an sh_test that runs the fuzzer
    `smoke_runs` times from those seeds with `dict` and -max_len=`max_len`
    (//checkpoint/fuzz:fuzz_smoke_test.sh); it fails on any crash, sanitizer report, leak or
    abort (a broken invariant of the harness). `size` is the test's size tag.

Example (tests/fuzz/BUILD):
    load("//tests/fuzz:fuzz.bzl", "loom_fuzzer")

    loom_fuzzer(
        name = "python_json",                 # harness python_json_fuzzer.cc
        srcs = [
            "fuzz_check.h",                   # the harness's helpers
            "//base:python_json.cc",
            "//base:python_json.h",
            "//base:python_float.cc",
            "//base:python_float.h",
        ],
        seeds = glob(["python_json_corpus/*"]),
        dict = "python_json.dict",
        smoke_runs = 20000,
        max_len = 4096,
    )

    ./bazelw test //tests/fuzz:python_json_fuzz_smoke_test
    ./bazelw build //tests/fuzz:python_json_fuzzer && mkdir -p /tmp/pj && \\
      cp tests/fuzz/python_json_corpus/* /tmp/pj/ && bazel-bin/tests/fuzz/python_json_fuzzer \\
        -dict=tests/fuzz/python_json.dict -max_len=4096 -runs=1000000 /tmp/pj
"""

# clang 14 with libFuzzer, ASan and UBSan (every UBSan report fatal).
CLANG_FUZZ = ("/usr/bin/clang++-14 -std=c++17 -O1 -g " +
              "-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined")

# Debian's abseil libraries (libabsl-dev 20220623) the parsers' Status, string and hash-map code
# needs. They are built with gcc; clang links them fine since both use the same libstdc++.
SYSTEM_ABSL = " ".join([
    "-labsl_statusor -labsl_status -labsl_cord -labsl_cordz_info -labsl_cord_internal",
    "-labsl_cordz_functions -labsl_exponential_biased -labsl_cordz_handle",
    "-labsl_synchronization -labsl_graphcycles_internal -labsl_time -labsl_civil_time",
    "-labsl_time_zone -labsl_bad_optional_access -labsl_stacktrace -labsl_strerror",
    "-labsl_symbolize -labsl_debugging_internal -labsl_demangle_internal",
    "-labsl_malloc_internal -labsl_bad_variant_access -labsl_str_format_internal",
    "-labsl_hash -labsl_city -labsl_low_level_hash -labsl_raw_hash_set",
    "-labsl_strings -labsl_strings_internal -labsl_base -labsl_spinlock_wait -labsl_int128",
    "-labsl_throw_delegate -labsl_raw_logging_internal -labsl_log_severity -lrt -latomic",
])

def loom_fuzzer(
        name,
        srcs,
        seeds,
        dict,
        smoke_runs,
        harness = None,
        protos = [],
        libs = "",
        max_len = 4096,
        size = "small"):
    """A libFuzzer binary :<name>_fuzzer and its smoke test :<name>_fuzz_smoke_test.

    Args:
      name: the target's stem; the harness defaults to <name>_fuzzer.cc.
      srcs: the parser's .cc files (all compiled) and the headers they include.
      seeds: the seed corpus files (glob(["<name>_corpus/*"])).
      dict: the libFuzzer dictionary file.
      smoke_runs: executions of the smoke test (keep it to a few seconds).
      harness: the file defining LLVMFuzzerTestOneInput.
      protos: .proto files to generate and compile in (each import listed too).
      libs: extra compiler and linker words.
      max_len: -max_len of the smoke test (and the recommended one for long runs).
      size: the smoke test's size tag.
    """
    harness = harness or (name + "_fuzzer.cc")
    ccs = [s for s in srcs if s.endswith(".cc")]
    proto_step = ""
    proto_ccs = ""
    if protos:
        # protoc writes <dir>/<path>.pb.{h,cc} for each workspace-relative .proto path.
        proto_step = ("PB=$$(mktemp -d) && trap 'rm -rf $$PB' EXIT && " +
                      "/usr/bin/protoc --proto_path=. --proto_path=/usr/include --cpp_out=$$PB " +
                      " ".join(["$(location %s)" % p for p in protos]) + " && " +
                      "PBCC=$$(for p in " + " ".join(["$(location %s)" % p for p in protos]) +
                      "; do echo $$PB/$${p%.proto}.pb.cc; done) && ")
        proto_ccs = "-I$$PB $$PBCC"
    native.genrule(
        name = name + "_fuzzer_bin",
        srcs = [harness] + srcs + protos,
        outs = [name + "_fuzzer"],
        cmd = proto_step + " ".join([
            CLANG_FUZZ,
            "-I.",
            "$(location %s)" % harness,
        ] + ["$(location %s)" % s for s in ccs] + [
            proto_ccs,
            "-o $@",
            libs,
            SYSTEM_ABSL,
        ]),
        executable = True,
    )
    native.filegroup(
        name = name + "_seeds",
        srcs = seeds,
    )
    native.sh_test(
        name = name + "_fuzz_smoke_test",
        size = size,
        srcs = ["//checkpoint/fuzz:fuzz_smoke_test.sh"],
        args = [
            "$(rootpath :%s_fuzzer)" % name,
            "$(rootpath %s)" % dict,
            str(smoke_runs),
            "$(rootpaths :%s_seeds)" % name,
        ],
        data = [
            dict,
            ":%s_fuzzer" % name,
            ":%s_seeds" % name,
        ],
        env = {"FUZZ_MAX_LEN": str(max_len)},
    )
