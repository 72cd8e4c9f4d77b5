"""Repository rule exposing a LibTorch installation as @libtorch.

LOOM_LIBTORCH (set by .bazelrc's configs; or in the environment) picks it:
  (unset) or "cuda"     LibTorch 2.11 from the pinned torch wheel (third_party/torch), a
                        CUDA 13.0 build, with CUDA and NCCL (libtorch_cuda.so,
                        libc10_cuda.so, the CUDA 13 toolkit's cudart; LOOM_HAS_CUDA=1). The
                        default (`--config=cuda` names it). Without a GPU everything runs on
                        the CPU, as Python's `pip install torch` does.
  "torch2"              the same wheel, CPU only: links libtorch_cpu.so and libc10.so.
                        `--config=torch2`.
  "debian"              Debian's `libtorch-dev` 1.13 (CPU only; headers under /usr/include,
                        libraries under /usr/lib/x86_64-linux-gnu). `--config=debian`.
  /path/to/libtorch     any LibTorch folder with include/ and lib/ (the libtorch zip, a torch
                        wheel's torch/ folder); CUDA is compiled in when it has libtorch_cuda.so.

./bazelw installs the pinned wheel into a virtual environment under $LOOM_PYTHON_CACHE
(default /var/cache/loom/python) when a command selects it; this rule fails, naming the folder
and ./bazelw, when it is missing. The CUDA toolkit is taken from LOOM_CUDA_HOME (default
/usr/local/cuda): the wheel's libtorch_cpu.so itself needs its libcudart.so.13.

Targets:
  @libtorch//:torch      ATen, c10, the C++ frontend and autograd.
  @libtorch//:c10d       torch.distributed's C++ core (TCPStore, ProcessGroupGloo, and
                         ProcessGroupNCCL on CUDA builds), with USE_C10D_GLOO defined.
  @libtorch//:python.sh  shell assignments for the Python torch of the same version, sourced
                         by //tests:require_python_torch.sh: LOOM_TORCH_PYTHON (the interpreter)
                         and LOOM_TORCH_PYTHON_LD_LIBRARY_PATH (what it needs to import torch).
  @libtorch//:defs.bzl   LIBTORCH_HAS_CUDA, LIBTORCH_FLAVOR ("debian", "torch2", "cuda",
                         "custom"), LIBTORCH_ROOT, LIBTORCH_GOLDEN_DIR ("testdata" for 1.13,
                         "testdata/torch2.11" for the wheel: where a test package keeps the
                         goldens its Python reference wrote with the matching torch),
                         LIBTORCH_REPO_ENV (the LOOM_LIBTORCH / LOOM_PYTHON_CACHE /
                         LOOM_CUDA_HOME values that were set, for a nested Bazel run).
"""

_DEBIAN_INCLUDE = "/usr/include"
_DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"

_DEFAULT_CACHE = "/var/cache/loom/python"
_DEFAULT_CUDA_HOME = "/usr/local/cuda"

# The wheel's include/ also carries third-party headers (protobuf 3.13 under google/) that
# must not shadow Debian's; only these folders are exposed.
_WHEEL_INCLUDE_DIRS = ["ATen", "c10", "caffe2", "torch", "fmt", "kineto"]

def _wheel_venv(ctx):
    """The virtual environment ./bazelw installed the pinned torch wheel into."""
    req = ctx.path(ctx.attr.wheel_requirements)
    result = ctx.execute(["sha256sum", str(req)])
    if result.return_code != 0:
        fail("sha256sum %s failed: %s" % (req, result.stderr))
    cache = ctx.os.environ.get("LOOM_PYTHON_CACHE", "").strip() or _DEFAULT_CACHE
    venv = "%s/venv-%s-%s" % (cache, req.basename[:-len(".txt")], result.stdout[:12])
    if not ctx.path(venv + "/loom-requirements.txt").exists:
        fail(("LibTorch 2.11 (the pinned torch wheel, %s) is not installed: no %s. Run the " +
              "command through ./bazelw (it installs the wheel with pip once per machine, " +
              "about 30 s), or set LOOM_PYTHON_CACHE to where it is.") % (ctx.attr.wheel_requirements, venv))
    return venv

def _wheel_libtorch(ctx, flavor):
    venv = _wheel_venv(ctx)
    torch_root = venv + "/lib/python3.11/site-packages/torch"
    cuda_home = ctx.os.environ.get("LOOM_CUDA_HOME", "").strip() or _DEFAULT_CUDA_HOME
    cuda_lib = cuda_home + "/lib64"
    if not ctx.path(cuda_lib + "/libcudart.so.13").exists:
        fail(("LibTorch 2.11 (the CUDA torch wheel) needs the CUDA 13 runtime: no %s/libcudart.so.13. " +
              "Set LOOM_CUDA_HOME to the CUDA 13 toolkit, or build against Debian's LibTorch 1.13 " +
              "(CPU only) with --config=debian (--repo_env=LOOM_LIBTORCH=debian in a workspace " +
              "depending on loom).") % cuda_lib)
    for d in _WHEEL_INCLUDE_DIRS:
        ctx.symlink(torch_root + "/include/" + d, "include/" + d)
    libdir = torch_root + "/lib"
    # The CPU stand-ins for cuFile, cuSPARSELt and NVSHMEM (third_party/torch/cpu_stub_libs.sh),
    # where the wheel's DT_RPATH finds them at run time.
    stand_ins = ["%s/../nvidia/%s/lib" % (torch_root, d) for d in ["cu13", "cusparselt", "nvshmem"]]
    search = ["-L" + libdir, "-Wl,-rpath," + libdir, "-Wl,-rpath," + cuda_lib]
    includes = ["include", "include/torch/csrc/api/include"]
    if flavor == "cuda":
        # c10/cuda's headers include the CUDA runtime's.
        ctx.symlink(cuda_home + "/include", "cuda_include")
        includes.append("cuda_include")
        # Not libtorch.so: in the wheel it only ties torch_cpu and torch_cuda together, and
        # exports a copy of libstdc++'s std::filesystem (see below) whose remove_all crashes.
        libs = ["-ltorch_cuda", "-ltorch_cpu", "-lc10_cuda", "-lc10"]
        extra = ["-L" + cuda_lib, "-lcudart", "-Wl,-rpath-link," + cuda_lib] + [
            "-Wl,-rpath-link," + d
            for d in stand_ins
        ]
    else:
        libs = ["-ltorch_cpu", "-lc10"]
        extra = ["-Wl,-rpath-link," + cuda_lib]
    return struct(
        includes = includes,
        hdrs = 'glob(["include/**", "cuda_include/**"])',
        # The wheel's libraries export their statically linked copy of libstdc++'s
        # std::filesystem. libstdc++.so.6 goes first among the executable's libraries so that
        # every std:: symbol binds to the system's own (the one the rest of loom is compiled
        # against) rather than to whichever torch library the loader meets first.
        linkopts = _always_linked(["-lstdc++"]) + search + _always_linked(libs) + extra + ["-pthread"],
        has_cuda = flavor == "cuda",
        root = torch_root,
        python = venv + "/bin/python",
        python_ld_library_path = cuda_lib,
        # The wheel's c10 is built without glog, so its headers would define LOG / CHECK of
        # their own and, depending on include order, take loom's LOG(INFO) lines away from
        # glog. C10_USE_GLOG makes them use glog (Debian's), as Debian's 1.13 does; c10's
        # MessageLogger, the one class that differs, has the same layout and severities in
        # both modes.
        glog_defines = ["C10_USE_GLOG"],
    )

def _folder_libtorch(ctx, root):
    inc = ctx.path(root + "/include")
    lib = ctx.path(root + "/lib")
    if not inc.exists or not lib.exists:
        fail("LOOM_LIBTORCH=%s must hold include/ and lib/ (a LibTorch folder)" % root)
    ctx.symlink(inc, "include")
    libdir = str(lib)
    has_cuda = ctx.path(libdir + "/libtorch_cuda.so").exists
    return struct(
        includes = ["include", "include/torch/csrc/api/include"],
        hdrs = 'glob(["include/**"])',
        linkopts = _linkopts(libdir, has_cuda),
        has_cuda = has_cuda,
        root = root,
        python = "",
        python_ld_library_path = "",
        glog_defines = [],
    )

def _debian_libtorch(ctx):
    if not ctx.path(_DEBIAN_INCLUDE + "/torch/csrc/api/include").exists:
        fail("LibTorch headers not found: install libtorch-dev (./bazelw does) " +
             "or set LOOM_LIBTORCH to a LibTorch folder")

    # Headers under /usr/include are on the compiler's default path; only the
    # C++ frontend's include root needs adding.
    ctx.symlink(_DEBIAN_INCLUDE + "/torch/csrc/api/include", "api_include")
    return struct(
        includes = ["api_include"],
        hdrs = 'glob(["api_include/**"])',
        linkopts = _linkopts(_DEBIAN_LIB, False),
        has_cuda = False,
        root = _DEBIAN_LIB,
        python = "/usr/bin/python3",
        python_ld_library_path = "",
        glog_defines = [],
    )

def _linkopts(libdir, has_cuda):
    libs = ["-ltorch", "-ltorch_cpu", "-lc10"]
    if has_cuda:
        libs = ["-ltorch", "-ltorch_cuda", "-ltorch_cpu", "-lc10_cuda", "-lc10"]
    # libstdc++ first, as for the wheel (_wheel_libtorch): a LibTorch folder's libraries may
    # export their own copy of std::filesystem.
    return _always_linked(["-lstdc++"]) + ["-L" + libdir, "-Wl,-rpath," + libdir] + _always_linked(libs) + ["-pthread"]

def _always_linked(libs):
    # LibTorch registers its operators from static initializers, so its libraries must stay
    # linked even when no symbol of theirs is referenced directly (Debian's gcc links with
    # --as-needed). push-state/pop-state limits that to these libraries and gives the ones
    # after them the linker's default back.
    return ["-Wl,--push-state,--no-as-needed"] + libs + ["-Wl,--pop-state"]

def _libtorch_repository_impl(ctx):
    choice = ctx.os.environ.get("LOOM_LIBTORCH", "").strip()
    if choice == "debian":
        flavor, t = "debian", _debian_libtorch(ctx)
    elif choice in ("", "cuda", "torch2"):
        flavor = choice or "cuda"
        t = _wheel_libtorch(ctx, flavor)
    elif choice.startswith("/"):
        flavor, t = "custom", _folder_libtorch(ctx, choice)
    else:
        fail(("LOOM_LIBTORCH=%s: expected debian, torch2, cuda or an absolute path to a " +
              "LibTorch folder (or leave it unset for the default, LibTorch 2.11 with CUDA)") % choice)
    _write_build(ctx, flavor, t)

def _write_build(ctx, flavor, t):
    defines = (["LOOM_HAS_CUDA=1"] if t.has_cuda else []) + t.glog_defines
    # Loom's glog shim, named through this file's own repository (loom's, whether it is the
    # main workspace or an external one).
    glog = Label("//third_party/glog")  # str() would drop the "@" in the main workspace
    glog_deps = ["@%s//%s:%s" % (glog.workspace_name, glog.package, glog.name)] if t.glog_defines else []
    c10d_defines = ["USE_C10D_GLOO"] + (["USE_C10D_NCCL"] if t.has_cuda else [])

    ctx.file("BUILD", """# Generated by //third_party/libtorch:libtorch.bzl ({flavor}: {root}).
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "torch",
    hdrs = {hdrs},
    includes = {includes},
    defines = {defines},
    linkopts = {linkopts},
    deps = {glog_deps},
)

cc_library(
    name = "c10d",
    defines = {c10d_defines},
    deps = [":torch"],
)

exports_files(["python.sh"])
""".format(
        flavor = flavor,
        root = t.root,
        hdrs = t.hdrs,
        includes = repr(t.includes),
        defines = repr(defines),
        linkopts = repr(t.linkopts),
        glog_deps = repr(glog_deps),
        c10d_defines = repr(c10d_defines),
    ))
    # Where goldens made by the Python torch of this LibTorch live: tests keep one set for
    # Debian's 1.13 (testdata/) and one for the wheel's 2.11 (testdata/torch2.11/).
    golden_dir = "testdata" if flavor in ("debian", "custom") else "testdata/torch2.11"
    # The variables that select this LibTorch, as set (a Bazel run nested in a test, such as
    # the consumer-workspace test, passes them on to get the same one).
    repo_env = {}
    for name in ["LOOM_LIBTORCH", "LOOM_PYTHON_CACHE", "LOOM_CUDA_HOME"]:
        if ctx.os.environ.get(name, "").strip():
            repo_env[name] = ctx.os.environ.get(name, "").strip()
    ctx.file("defs.bzl", ("LIBTORCH_HAS_CUDA = %s\nLIBTORCH_FLAVOR = %r\nLIBTORCH_ROOT = %r\n" +
                          "LIBTORCH_GOLDEN_DIR = %r\nLIBTORCH_REPO_ENV = %r\n") %
                         (t.has_cuda, flavor, t.root, golden_dir, repo_env))
    ctx.file("python.sh", ("# Generated by //third_party/libtorch:libtorch.bzl: the Python torch of " +
                           "the LibTorch this build uses (%s).\nLOOM_TORCH_PYTHON=%s\n" +
                           "LOOM_TORCH_PYTHON_LD_LIBRARY_PATH=%s\n") % (flavor, t.python, t.python_ld_library_path))

libtorch_repository = repository_rule(
    implementation = _libtorch_repository_impl,
    attrs = {"wheel_requirements": attr.label(default = "//third_party/torch:torch-2.11.0.txt", allow_single_file = [".txt"])},
    environ = ["LOOM_LIBTORCH", "LOOM_PYTHON_CACHE", "LOOM_CUDA_HOME"],
    local = True,
)
