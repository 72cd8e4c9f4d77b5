"""Reads loom's BUILD files as data: targets, their files and their dependencies.

A BUILD file is Starlark, which for the rules loom uses is valid Python. Each file is executed
with stub rules (cc_library, cc_test, genrule, loom_cc_proto, ...) that record the target's name,
kind, files (srcs, hdrs, textual_hdrs, outs) and dependencies (deps, data, implementation_deps,
actual) instead of building anything. `glob` lists the files present next to the BUILD file.

    graph = build_graph.read_tree("/path/to/workspace")
    for target in graph.targets.values(): print(target.label, target.deps)
"""

import builtins
import os
import re

BUILD_NAMES = ("BUILD", "BUILD.bazel")

# Attributes whose labels are dependencies of the target (files in srcs/hdrs are its own).
DEP_ATTRS = ("deps", "data", "implementation_deps", "actual", "tools")
FILE_ATTRS = ("srcs", "hdrs", "textual_hdrs")


class Target:
  """One rule instance of a BUILD file."""

  def __init__(self, package, kind, name, attrs):
    self.package = package
    self.kind = kind
    self.name = name
    self.label = "//%s:%s" % (package, name)
    self.testonly = bool(attrs.get("testonly")) or kind.endswith("_test")
    self.attrs = attrs
    self.deps = []  # normalized labels, in BUILD order, without duplicates
    for attr in DEP_ATTRS:
      value = attrs.get(attr)
      if isinstance(value, str):
        value = [value]
      for label in value or []:
        normal = normalize_label(label, package)
        if normal not in self.deps:
          self.deps.append(normal)
    self.file_labels = []  # normalized labels of srcs / hdrs entries
    self.hdr_labels = []
    for attr in FILE_ATTRS:
      for label in attrs.get(attr) or []:
        normal = normalize_label(label, package)
        self.file_labels.append(normal)
        if label_package(normal) != package and normal not in self.deps:
          self.deps.append(normal)  # a file of another package is a dependency on it
        if attr != "srcs" or label.endswith((".h", ".hpp", ".inc")):
          self.hdr_labels.append(normal)
    self.outs = ["%s/%s" % (package, o) if package else o for o in attrs.get("outs") or []]

  def __repr__(self):
    return "Target(%s %s)" % (self.kind, self.label)


def normalize_label(label, package):
  """'//a/b' -> '//a/b:b', ':x' -> '//pkg:x', 'x.h' -> '//pkg:x.h', '@r//p:t' kept whole."""
  if label.startswith("@"):
    repo, _, rest = label.partition("//")
    if not rest:
      return label + "//:" + label[1:]
    if ":" not in rest:
      rest += ":" + rest.rsplit("/", 1)[-1]
    return repo + "//" + rest
  if label.startswith("//"):
    rest = label[2:]
    if ":" not in rest:
      rest += ":" + rest.rsplit("/", 1)[-1]
    return "//" + rest
  if label.startswith(":"):
    label = label[1:]
  return "//%s:%s" % (package, label)


def label_package(label):
  """The package of a normalized label: '//a/b:c' -> 'a/b', '@r//p:t' -> '@r'."""
  if label.startswith("@"):
    return label.split("//", 1)[0]
  return label[2:].split(":", 1)[0]


class _Select(list):
  """select({...}) as the union of every branch (a dependency in any configuration counts)."""


class _Recorder:
  """The globals a BUILD file runs with: every unknown name is a rule that records itself."""

  def __init__(self, graph, package, directory):
    self.graph = graph
    self.package = package
    self.directory = directory

  def rule(self, kind):
    def record(*args, **attrs):
      name = attrs.get("name")
      if name is None:
        return None
      self.graph.add(Target(self.package, kind, name, attrs))
      return None
    return record

  def loom_cc_proto(self, name, srcs, deps=(), proto_deps=(), visibility=None):
    outs = []
    for src in srcs:
      outs += [src[:-len(".proto")] + ".pb.h", src[:-len(".proto")] + ".pb.cc"]
    self.rule("genrule")(name=name + "_gen", srcs=list(srcs) + list(proto_deps), outs=outs)
    self.rule("cc_library")(
        name=name,
        srcs=[o for o in outs if o.endswith(".cc")],
        hdrs=[o for o in outs if o.endswith(".h")],
        deps=list(deps) + ["//third_party/protobuf"],
        visibility=visibility)

  def package_rule(self, default_visibility=None, **unused):
    if default_visibility is not None:
      self.graph.default_visibility[self.package] = list(default_visibility)

  def package_group(self, name, packages=(), includes=()):
    self.graph.package_groups["//%s:%s" % (self.package, name)] = list(packages)

  def glob(self, include, exclude=(), exclude_directories=1, allow_empty=True):
    found = []
    for root, dirs, files in os.walk(self.directory):
      rel_root = os.path.relpath(root, self.directory)
      if rel_root != "." and any(n in files for n in BUILD_NAMES):
        dirs[:] = []  # a sub-package: glob does not cross into it
        continue
      for f in files:
        rel = f if rel_root == "." else os.path.join(rel_root, f)
        if _glob_match(rel, include) and not _glob_match(rel, exclude):
          found.append(rel)
    return sorted(found)

  def select(self, branches, no_match_error=""):
    merged = _Select()
    for value in branches.values():
      merged.extend(value)
    return merged

  def namespace(self):
    recorder = self

    class Namespace(dict):
      def __missing__(self, key):
        if key in builtins.__dict__:
          raise KeyError(key)
        return recorder.rule(key)

    ns = Namespace(__builtins__=builtins)

    def load(label, *names, **aliases):
      # @libtorch//:defs.bzl's constants as the default configuration (LibTorch 2.11 from the
      # torch wheel, with CUDA) defines them; other .bzl files define rules and macros,
      # recorded when called.
      if label == "@libtorch//:defs.bzl":
        for local, name in [(n, n) for n in names] + list(aliases.items()):
          ns[local] = _LIBTORCH_DEFS[name]

    ns["load"] = load
    ns["package"] = self.package_rule
    ns["licenses"] = lambda *a, **k: None
    ns["exports_files"] = lambda *a, **k: None
    ns["package_group"] = self.package_group
    ns["glob"] = self.glob
    ns["select"] = self.select
    ns["loom_cc_proto"] = self.loom_cc_proto
    return ns


_LIBTORCH_DEFS = {
    "LIBTORCH_HAS_CUDA": True,
    "LIBTORCH_FLAVOR": "cuda",
    "LIBTORCH_ROOT": "/var/cache/loom/python/venv-torch/lib/python3.11/site-packages/torch",
    "LIBTORCH_REPO_ENV": {},
    "LIBTORCH_GOLDEN_DIR": "testdata/torch2.11",
}


def _glob_match(path, patterns):
  for pattern in patterns:
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(
        r"\*", "[^/]*")
    if re.fullmatch(regex, path):
      return True
  return False


class Graph:
  """Every target of the tree, by label, and where each header comes from."""

  def __init__(self, root):
    self.root = root
    self.targets = {}
    self.packages = set()
    self.default_visibility = {}  # package -> package()'s default_visibility, where given
    self.package_groups = {}  # label -> packages

  def add(self, target):
    self.targets[target.label] = target

  def files_of(self, label, seen=None):
    """Workspace paths a label in srcs/hdrs stands for (a file, or a rule's outputs)."""
    seen = seen or set()
    if label in seen:
      return []
    seen.add(label)
    target = self.targets.get(label)
    package = label_package(label)
    if target is None:
      name = label.split(":", 1)[1]
      return ["%s/%s" % (package, name) if package else name]
    if target.outs:
      return list(target.outs)
    files = []
    for sub in target.file_labels:
      files += self.files_of(sub, seen)
    return files

  def headers_of(self, label, seen=None):
    """Headers a dependent of `label` may include: its hdrs (and headers in srcs), through
    aliases to their actual target."""
    seen = seen or set()
    if label in seen:
      return set()
    seen.add(label)
    target = self.targets.get(label)
    if target is None:
      return set()
    if target.kind == "alias":
      return self.headers_of(target.deps[0], seen) if target.deps else set()
    if target.kind != "cc_library":
      return set()
    headers = set()
    for sub in target.hdr_labels:
      headers.update(self.files_of(sub))
    return headers

  def own_files(self, target):
    files = []
    for sub in target.file_labels:
      files += self.files_of(sub)
    return files


def _ignored(root):
  """The folders root/.bazelignore lists (Bazel looks for no packages there)."""
  try:
    with open(os.path.join(root, ".bazelignore")) as f:
      return {os.path.normpath(os.path.join(root, line.strip())) for line in f if line.strip()}
  except OSError:
    return set()


def read_tree(root):
  """Executes every BUILD file under root (skipping bazel-* output links and .bazelignore)."""
  graph = Graph(root)
  ignored = _ignored(root)
  for directory, dirs, files in os.walk(root):
    dirs[:] = sorted(d for d in dirs if not d.startswith(("bazel-", ".")) and
                     os.path.normpath(os.path.join(directory, d)) not in ignored)
    build = next((n for n in BUILD_NAMES if n in files), None)
    if build is None:
      continue
    package = os.path.relpath(directory, root)
    package = "" if package == "." else package.replace(os.sep, "/")
    graph.packages.add(package)
    path = os.path.join(directory, build)
    with open(path) as f:
      source = f.read()
    recorder = _Recorder(graph, package, directory)
    exec(compile(source, path, "exec"), recorder.namespace())
  return graph
