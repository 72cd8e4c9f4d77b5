"""Checks loom's BUILD files against the layers written in README.md ("Architecture").

Rules (each failure names the target, the dependency and the rule):
  layering   a target may depend only on targets of packages in layers below its own; a
             package never depends sideways on another package of its layer. An `alias` is a
             second name for its target (e.g. //trainer:run_glue, kept for the commands users
             type), not a dependency: it may name a target of any layer. A "package" of
             the table is a top-level folder with everything under it, unless a deeper folder
             has its own row (tests/testdata).
  never-uses a package of the table's "never uses" lines does not reach (through deps) the
             named repository, except through the named targets (its aliases, second names
             of targets elsewhere, are not uses).
  include    every #include "pkg/path.h" in a target's srcs/hdrs is a header of the target
             itself or of one of its direct deps (aliases count as their actual target).
  visibility each library package's default_visibility names the package_group of the layers
             above it (defined in the root BUILD), and each group lists exactly those layers;
             packages of the table's "keep their own visibility" line are left alone. A
             library target is public exactly when README.md lists it for outside use
             (between "<!-- public:begin" and "<!-- public:end -->", as `@loom//pkg:name` or
             `@loom//pkg`), and every listed target exists and is public.
  coverage   every package a BUILD file refers to was given to the check (its BUILD is here).

Usage:
  check_layering.py WORKSPACE_ROOT [README]     exit 0 when clean, 1 with one line per failure

The table is read from README between "<!-- layers:begin" and "<!-- layers:end -->": rows
"| N | `pkg` `pkg` | role |", highest layer first; lines "- `pkg` never uses `@repo`,
except through `//pkg:target` ..."; and one line "- `pkg` `pkg` ... keep their own visibility".
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_graph  # pylint: disable=g-import-not-at-top

RULE_LAYERING = ("a package may depend only on packages in layers below its own, never upward "
                 "or sideways (README.md, Architecture)")
RULE_INCLUDE = "every #include is backed by a declared dependency (README.md, Architecture)"


class Layers:
  """The README's table: ordered rows of packages, and the "never uses" rules."""

  def __init__(self, rows, never_uses, own_visibility, public=()):
    self.rows = rows  # [[package, ...], ...], highest first
    self.never_uses = never_uses  # [(package, repo, {exempt label, ...})]
    self.own_visibility = own_visibility  # table entries the visibility rule leaves alone
    self.public = set(public)  # "//pkg:name" of the targets listed for outside use
    self.row_of = {}
    for index, row in enumerate(rows):
      for package in row:
        self.row_of[package] = index

  def layer_of_package(self, package):
    """The table entry a Bazel package belongs to (longest matching folder), or None."""
    if package.startswith("@"):
      return "third_party" if "third_party" in self.row_of else None
    parts = package.split("/")
    for n in range(len(parts), 0, -1):
      key = "/".join(parts[:n])
      if key in self.row_of:
        return key
    return None

  def describe(self, entry):
    return "'%s' (layer %d of %d)" % (entry, self.row_of[entry] + 1, len(self.rows))

  def group_name(self, entry):
    """The root BUILD's package_group of the layers above entry's layer."""
    return "above_" + self.rows[self.row_of[entry]][0].replace("/", "_")


def parse_readme(text):
  match = re.search(r"<!-- layers:begin.*?-->(.*?)<!-- layers:end -->", text, re.S)
  if not match:
    raise ValueError("README.md has no <!-- layers:begin --> ... <!-- layers:end --> table")
  rows, never_uses, own_visibility = [], [], set()
  for line in match.group(1).splitlines():
    row = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
    if row:
      number = int(row.group(1))
      if number != len(rows) + 1:
        raise ValueError("README.md layers: row %d comes after row %d" % (number, len(rows)))
      rows.append(re.findall(r"`([\w/]+)`", row.group(2)))
      continue
    never = re.match(r"-\s*`([\w/]+)` never uses `(@\w+)`(.*)", line)
    if never:
      exempt = set(re.findall(r"`(//[\w/]+:[\w.-]+)`", never.group(3)))
      never_uses.append((never.group(1), never.group(2), exempt))
      continue
    own = re.match(r"-\s*((?:`[\w/]+`\s*)+)keep their own visibility", line)
    if own:
      own_visibility.update(re.findall(r"`([\w/]+)`", own.group(1)))
  return Layers(rows, never_uses, own_visibility, parse_public(text))


def parse_public(text):
  """The "//pkg:name" of README's targets for outside use (none without the markers)."""
  match = re.search(r"<!-- public:begin.*?-->(.*?)<!-- public:end -->", text, re.S)
  labels = set()
  for entry in re.findall(r"`@loom//([^`]*)`", match.group(1) if match else ""):
    parsed = re.fullmatch(r"([\w/]+)(?::([\w.-]+))?", entry)
    if parsed is None:  # kept as written: check_visibility reports it as defined by no BUILD
      labels.add("//" + entry)
      continue
    package, name = parsed.groups()
    labels.add("//%s:%s" % (package, name or package.split("/")[-1]))
  return labels


def check_layering(graph, layers):
  failures = []
  for target in sorted(graph.targets.values(), key=lambda t: t.label):
    own = layers.layer_of_package(target.package)
    if target.package == "":
      continue  # the root package holds only files and the package_groups
    if own is None:
      failures.append("%s: package //%s is in no layer of README.md's Architecture table; "
                      "add it to a row" % (target.label, target.package))
      continue
    if target.kind == "alias":
      continue  # a second name for its target, not a dependency
    for dep in target.deps:
      if dep.endswith(":layering_files"):
        continue  # this check's own inputs, read as data, not a code dependency
      other = layers.layer_of_package(build_graph.label_package(dep))
      if other is None or other == own:
        continue  # an unknown package is reported on its own targets
      if layers.row_of[other] > layers.row_of[own]:
        continue
      way = "upward" if layers.row_of[other] < layers.row_of[own] else "sideways"
      failures.append("%s depends on %s: %s dependency from %s to %s; rule: %s" %
                      (target.label, dep, way, layers.describe(own), layers.describe(other),
                       RULE_LAYERING))
  return failures


def check_never_uses(graph, layers):
  failures = []
  for package, repo, exempt in layers.never_uses:
    for target in sorted(graph.targets.values(), key=lambda t: t.label):
      if layers.layer_of_package(target.package) != package or target.label in exempt:
        continue
      if target.kind == "alias":
        continue  # a second name of a target elsewhere (e.g. //args:show_args), not a use
      path = _path_to_repo(graph, target.label, repo, exempt, set())
      if path and layers.layer_of_package(build_graph.label_package(path[1])) == package:
        continue  # reported on the target of the package where the path leaves it
      if path:
        failures.append("%s reaches %s through %s; rule: `%s` never uses `%s` except through "
                        "%s (README.md, Architecture)" %
                        (target.label, repo, " -> ".join(path[1:]), package, repo,
                         ", ".join(sorted(exempt)) or "nothing"))
  return failures


def _path_to_repo(graph, label, repo, exempt, seen):
  if label.startswith(repo + "//"):
    return [label]
  if label in seen or label in exempt:
    return None
  seen.add(label)
  target = graph.targets.get(label)
  for dep in target.deps if target else []:
    rest = _path_to_repo(graph, dep, repo, exempt, seen)
    if rest:
      return [label] + rest
  return None


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(graph, layers):
  provider = {}  # header path -> labels declaring it
  for label in graph.targets:
    for header in graph.headers_of(label):
      provider.setdefault(header, []).append(label)
  failures = []
  for target in sorted(graph.targets.values(), key=lambda t: t.label):
    if not target.kind.startswith("cc_"):
      continue
    own = set(graph.own_files(target))
    visible = set(own)
    for dep in target.deps:
      visible |= graph.headers_of(dep)
    for path in sorted(own):
      full = os.path.join(graph.root, path)
      if not os.path.isfile(full):
        continue  # generated
      with open(full, errors="replace") as f:
        text = f.read()
      for include in INCLUDE.findall(text):
        if include in visible or include not in provider:
          continue  # a system / third-party header, or declared
        failures.append("%s: %s includes \"%s\" from %s, which is not a direct dependency; "
                        "rule: %s" % (target.label, path, include,
                                      " or ".join(sorted(provider[include])), RULE_INCLUDE))
  return failures


def check_visibility(graph, layers):
  """default_visibility of each library package, and the root BUILD's package_groups."""
  failures = []
  groups = graph.package_groups
  for index, row in enumerate(layers.rows):
    if all(p in layers.own_visibility for p in row):
      continue
    name = layers.group_name(row[0])
    want = sorted("//%s/..." % p for higher in layers.rows[:index] for p in higher)
    have = groups.get("//:" + name)
    if have is None:
      failures.append("//:%s is missing from the root BUILD: package_group(name = \"%s\", "
                      "packages = %s); rule: each layer's users are one package_group" %
                      (name, name, want))
    elif sorted(have) != want:
      failures.append("//:%s lists %s, but README.md's layers above %s are %s; rule: the "
                      "package_groups follow the Architecture table" %
                      (name, sorted(have), layers.describe(row[0]), want))
  for package in sorted(graph.packages):
    entry = layers.layer_of_package(package)
    if entry is None or entry in layers.own_visibility or package == "":
      continue
    group = "//:" + layers.group_name(entry)
    top = package.split("/")[0]
    allowed = {"//visibility:private", group, "//%s:__subpackages__" % top, "//%s:__pkg__" % top}
    default = graph.default_visibility.get(package)
    want = [group]
    if any(p.startswith(top + "/") for p in graph.packages) and package == top:
      want.append("//%s:__subpackages__" % top)
    if default is None or not set(default) <= allowed or not (
        group in default or set(default) <= {"//visibility:private",
                                             "//%s:__subpackages__" % top}):
      failures.append("//%s: default_visibility is %s; it should be %s (the layers above %s; "
                      "its own subpackages and private are fine too); rule: library packages "
                      "are visible only to the layers above them (README.md, Architecture)" %
                      (package, default, _starlark_list(want), layers.describe(entry)))
  for target in sorted(graph.targets.values(), key=lambda t: t.label):
    entry = layers.layer_of_package(target.package)
    visibility = target.attrs.get("visibility") or []
    if (entry is not None and entry not in layers.own_visibility and
        "//visibility:public" in visibility and target.kind == "cc_library" and
        target.label not in layers.public):
      failures.append("%s: visibility is public, but README.md does not list it for outside "
                      "use; rule: library packages are visible only to the layers above them "
                      "(drop the attribute to use the package's default, or list the target "
                      "between <!-- public:begin --> and <!-- public:end -->)" % target.label)
  for label in sorted(layers.public):
    target = graph.targets.get(label)
    if target is None:
      failures.append("%s is listed in README.md for outside use but no BUILD file defines it" %
                      label)
      continue
    public = "//visibility:public" in (
        target.attrs.get("visibility") or graph.default_visibility.get(target.package) or [])
    if not public:
      failures.append("%s is listed in README.md for outside use but is not public; add "
                      "visibility = [\"//visibility:public\"] to it" % label)
  return failures


def _starlark_list(items):
  return "[" + ", ".join('"%s"' % i for i in items) + "]"


def check_coverage(graph):
  failures = []
  for target in sorted(graph.targets.values(), key=lambda t: t.label):
    for dep in target.deps:
      package = build_graph.label_package(dep)
      if package.startswith(("@", "third_party/")) or package in graph.packages:
        continue
      failures.append("%s depends on %s, but //%s's BUILD file is not among the files given "
                      "to the check; add //%s:layering_files to //tests/layering:layering_test's "
                      "data (and the filegroup to %s/BUILD)" %
                      (target.label, dep, package, package, package))
  return failures


def run(root, readme_path):
  with open(readme_path) as f:
    layers = parse_readme(f.read())
  graph = build_graph.read_tree(root)
  failures = []
  failures += check_coverage(graph)
  failures += check_layering(graph, layers)
  failures += check_never_uses(graph, layers)
  failures += check_includes(graph, layers)
  failures += check_visibility(graph, layers)
  return graph, failures


def main(argv):
  root = argv[1] if len(argv) > 1 else "."
  readme = argv[2] if len(argv) > 2 else os.path.join(root, "README.md")
  graph, failures = run(root, readme)
  for failure in failures:
    print("FAIL " + failure)
  if failures:
    print("%d layering failure(s) in %d packages, %d targets" %
          (len(failures), len(graph.packages), len(graph.targets)))
    return 1
  print("PASS: %d packages, %d targets follow README.md's layers" %
        (len(graph.packages), len(graph.targets)))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
