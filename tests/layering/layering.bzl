"""layering_files(): the files //tests/layering:layering_test reads from a package.

Every package calls it once (after package()), and //tests/layering:layering_test lists the
package's :layering_files in its data, so the check sees the BUILD file and the C++ sources
inside its sandbox:

    load("//tests/layering:layering.bzl", "layering_files")
    package(default_visibility = ["//:above_base"])
    layering_files()
"""

def layering_files(extra = []):
    native.filegroup(
        name = "layering_files",
        # bazel-*: the root package's convenience symlinks into the output trees (generated
        # .pb.cc files that come and go as the configuration switches).
        srcs = native.glob(
            ["BUILD", "**/*.h", "**/*.cc", "**/*.inc"],
            exclude = ["bazel-*/**"],
        ) + extra,
        visibility = ["//tests/layering:__pkg__"],
    )
