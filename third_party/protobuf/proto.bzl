"""loom_cc_proto: C++ code for a .proto, generated with Debian's /usr/bin/protoc.

Bazel 4's native proto rules download protobuf; this genrule-based macro does not.

    loom_cc_proto(name = "foo_cc_proto", srcs = ["foo.proto"], deps = [":bar_cc_proto"])

produces a cc_library whose headers are included as "<package>/foo.pb.h".
Imports resolve against the workspace root and /usr/include (for google/protobuf/*).
"""

def loom_cc_proto(name, srcs, deps = [], proto_deps = [], visibility = None):
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
    native.genrule(
        name = name + "_gen",
        srcs = srcs + proto_deps,
        outs = outs,
        cmd = "/usr/bin/protoc --proto_path=. --proto_path=/usr/include --cpp_out=$(GENDIR) " +
              " ".join(["$(location %s)" % s for s in srcs]),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party/protobuf"],
        visibility = visibility,
    )
