"""loom_cc_proto: C++ code for a .proto, generated with Debian's /usr/bin/protoc.

Bazel 4's native proto rules download protobuf; this genrule-based macro does not.

    loom_cc_proto(name = "foo_cc_proto", srcs = ["foo.proto"], deps = [":bar_cc_proto"])

produces a cc_library whose headers are included as "<package>/foo.pb.h".
Imports resolve against the root of the repository the BUILD file is in (loom's, also when
loom is an external repository of another workspace: its files are then under
external/<name>/ in the execution root) and /usr/include (for google/protobuf/*).
"""

def _repository_root():
    """Where the calling BUILD file's repository lies, relative to the execution root."""
    repository = native.repository_name()  # "@" for the main workspace, "@loom" otherwise
    return "." if repository == "@" else "external/" + repository[1:]

def loom_cc_proto(name, srcs, deps = [], proto_deps = [], visibility = None):
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
    root = _repository_root()
    native.genrule(
        name = name + "_gen",
        srcs = srcs + proto_deps,
        outs = outs,
        cmd = ("/usr/bin/protoc --proto_path={root} --proto_path=/usr/include " +
               "--cpp_out=$(GENDIR)/{root} ").format(root = root) +
              " ".join(["$(location %s)" % s for s in srcs]),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + [Label("//third_party/protobuf")],
        visibility = visibility,
    )
