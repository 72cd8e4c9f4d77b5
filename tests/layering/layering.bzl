"""layering_files(): the files //tests/layering:layering_test reads from a package.

Every package calls it once (after package()), and //tests/layering:layering_test lists the
package's :layering_files in its data, so the check sees the BUILD file and the C++ sources
inside its sandbox:

    load("//tests/layering:layering.bzl", "layering_files")
    package(default_visibility = ["//:above_base"])
    layering_files()
"""

def layering_files(extra = []):
    # The root package holds no sources, and its folder holds the convenience symlinks into
    # the output trees (bazel-*): a recursive glob there follows them, and when loom is an
    # external repository of another workspace, Bazel finds them an infinite symlink loop.
    patterns = ["BUILD", "*.h", "*.cc", "*.inc"] if native.package_name() == "" else [
        "BUILD",
        "**/*.h",
        "**/*.cc",
        "**/*.inc",
    ]
    native.filegroup(
        name = "layering_files",
        srcs = native.glob(patterns) + extra,
        visibility = ["//tests/layering:__pkg__"],
    )
