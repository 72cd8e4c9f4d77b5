"""loom_dependencies(): every repository loom's targets need, for loom's own WORKSPACE and yours.

A workspace that depends on loom declares it under the name `loom` (the name is part of the
runfiles paths loom's programs look themselves up by) and calls this macro once:

    local_repository(name = "loom", path = "/path/to/loom")   # or an archive of it
    load("@loom//:deps.bzl", "loom_dependencies")
    loom_dependencies()

It declares, skipping any name the workspace already declared (declare yours first to use
your own):
  rules_java, platforms      Debian's bazel-rules-java / bazel-platforms (installed by loom's
                             ./bazelw), which Bazel 4.2.3's @bazel_tools loads.
  rules_cc                   loom's shim re-exporting the native C++ rules (Debian's
                             bazel-rules-cc is too new for Bazel 4.2.3).
  remote_coverage_tools      empty stand-ins so `bazel test` runs without downloading them.
  libtorch                   LibTorch (third_party/libtorch/libtorch.bzl): the pinned torch 2.11
                             wheel with CUDA by default; LOOM_LIBTORCH (`--repo_env`) picks
                             torch2 / debian / a LibTorch folder, as loom's --config=torch2 /
                             --config=debian do.
  python_interop             the pinned Python packages of loom's interop tests; fetched only
                             when one of those tests is built.

Nothing here downloads. Every repository is a local folder (the Debian packages, the torch
wheel and the Python packages are installed once per machine by loom's ./bazelw).
"""

load("//third_party/libtorch:libtorch.bzl", "libtorch_repository")
load("//third_party/python:python_interop.bzl", "python_interop_repository")

def _loom_subfolder_repository_impl(ctx):
    # The folder `subfolder` of the repository holding this file, whatever that repository is
    # named and wherever it lives (the main workspace or an external one).
    root = ctx.path(ctx.attr._anchor).dirname
    source = root
    for part in ctx.attr.subfolder.split("/"):  # Bazel 4's get_child takes one name
        source = source.get_child(part)
    if not source.exists:
        fail("loom_dependencies: %s is missing from loom's tree (%s)" % (ctx.attr.subfolder, root))
    for child in source.readdir():
        ctx.symlink(child, child.basename)

# A repository made of a folder of loom's own tree (local_repository's path would be relative
# to the workspace that calls the macro, not to loom).
_loom_subfolder_repository = repository_rule(
    implementation = _loom_subfolder_repository_impl,
    attrs = {
        "subfolder": attr.string(mandatory = True),
        "_anchor": attr.label(default = "//:deps.bzl", allow_single_file = True),
    },
    local = True,
)

# The interop tests' pinned packages (third_party/python/*.txt, installed by ./bazelw).
_PYTHON_INTEROP_REQUIREMENTS = [
    "//third_party/python:interop-transformers-4.38.txt",
    "//third_party/python:interop-transformers-4.41.txt",
    "//third_party/python:interop-sacrebleu-2.4.txt",
    "//third_party/python:interop-optuna-4.6.txt",
]

def _maybe(rule, name, **kwargs):
    if not native.existing_rule(name):
        rule(name = name, **kwargs)

def loom_dependencies():
    """Declares the repositories listed in this file's docstring that are not declared yet."""
    _maybe(native.local_repository, "rules_java", path = "/usr/share/bazel/rules/java")
    _maybe(native.local_repository, "platforms", path = "/usr/share/bazel/tools/platforms")
    _maybe(_loom_subfolder_repository, "rules_cc", subfolder = "third_party/bazel/rules_cc")
    _maybe(
        _loom_subfolder_repository,
        "remote_coverage_tools",
        subfolder = "third_party/bazel/remote_coverage_tools",
    )
    _maybe(libtorch_repository, "libtorch")
    _maybe(
        python_interop_repository,
        "python_interop",
        requirements = [str(Label(r)) for r in _PYTHON_INTEROP_REQUIREMENTS],
    )
