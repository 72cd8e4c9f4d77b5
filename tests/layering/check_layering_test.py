"""Self-test of check_layering.py: small trees with planted violations, and the real tree
(the test's runfiles) with `//base:file_util` made to depend on `//trainer:trainer`.

    /usr/bin/python3 tests/layering/check_layering_test.py   (from a tree with the packages)
"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layering  # pylint: disable=g-import-not-at-top

README = """# fixture

## Architecture

<!-- layers:begin -->
| layer | packages | role |
|---|---|---|
| 1 | `app` `tool` | programs |
| 2 | `core` | the middle |
| 3 | `base` `third_party` | the floor |

- `core` never uses `@libtorch`, except through `//core:torch_io`.
- `app` `tool` `third_party` keep their own visibility (programs).
<!-- layers:end -->
"""

ROOT_BUILD = """
package_group(name = "above_core", packages = ["//app/...", "//tool/..."])
package_group(name = "above_base", packages = ["//app/...", "//core/...", "//tool/..."])
"""

CLEAN = {
    "README.md": README,
    "BUILD": ROOT_BUILD,
    "base/BUILD": """
package(default_visibility = ["//:above_base"])
cc_library(name = "util", hdrs = ["util.h"])
""",
    "base/util.h": "#pragma once\n",
    "core/BUILD": """
load("//x:y.bzl", "z")
package(default_visibility = ["//:above_core"])
cc_library(name = "core", srcs = ["core.cc"], hdrs = ["core.h"], deps = ["//base:util"])
cc_library(name = "torch_io", srcs = ["torch_io.cc"], deps = ["@libtorch//:torch"])
""",
    "core/core.h": '#include "base/util.h"\n#include <vector>\n',
    "core/core.cc": '#include "core/core.h"\n#include "absl/status/status.h"\n',
    "core/torch_io.cc": "",
    "app/BUILD": """
[cc_binary(name = n, srcs = [n + ".cc"], deps = ["//core"]) for n in ["a", "b"]]
""",
    "app/a.cc": '#include "core/core.h"\n',
    "app/b.cc": "",
    "tool/BUILD": 'cc_binary(name = "t", deps = select({"//c": ["//core"], "//d": []}))\n',
}


class FixtureTest(unittest.TestCase):

  def check(self, changes):
    root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    self.addCleanup(shutil.rmtree, root)
    files = dict(CLEAN)
    files.update(changes)
    for path, text in files.items():
      if text is None:
        continue
      os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
      with open(os.path.join(root, path), "w") as f:
        f.write(text)
    _, failures = check_layering.run(root, os.path.join(root, "README.md"))
    return failures

  def assertOneFailure(self, failures, *words):
    self.assertEqual(len(failures), 1, failures)
    for word in words:
      self.assertIn(word, failures[0])

  def test_clean_tree_passes(self):
    self.assertEqual(self.check({}), [])

  def test_upward_dependency_fails(self):
    failures = self.check({"base/BUILD": """
package(default_visibility = ["//:above_base"])
cc_library(name = "util", hdrs = ["util.h"], deps = ["//core"])
"""})
    self.assertOneFailure(failures, "//base:util depends on //core:core",
                          "upward dependency from 'base' (layer 3 of 3) to 'core' (layer 2 of 3)",
                          "rule: a package may depend only on packages in layers below its own")

  def test_sideways_dependency_fails(self):
    failures = self.check({"tool/BUILD": 'cc_binary(name = "t", deps = ["//app:a"])\n'})
    self.assertOneFailure(failures, "//tool:t depends on //app:a", "sideways dependency")

  def test_dependency_through_a_file_label_counts(self):
    failures = self.check({"base/BUILD": """
package(default_visibility = ["//:above_base"])
cc_library(name = "util", hdrs = ["util.h"])
genrule(name = "g", srcs = ["//core:core.h"], outs = ["g.h"], cmd = "")
"""})
    self.assertOneFailure(failures, "//base:g depends on //core:core.h", "upward")

  def test_undeclared_include_fails(self):
    failures = self.check({"app/b.cc": '#include "base/util.h"\n'})
    self.assertOneFailure(failures, "//app:b: app/b.cc includes \"base/util.h\" from //base:util",
                          "not a direct dependency",
                          "rule: every #include is backed by a declared dependency")

  def test_never_uses_fails_outside_the_exception(self):
    failures = self.check({"core/BUILD": """
package(default_visibility = ["//:above_core"])
cc_library(name = "core", srcs = ["core.cc"], hdrs = ["core.h"], deps = [":torch_io", "//base:util"])
cc_library(name = "torch_io", srcs = ["torch_io.cc"], deps = ["@libtorch//:torch"])
cc_library(name = "leak", deps = ["@libtorch//:torch"])
"""})
    self.assertOneFailure(failures, "//core:leak reaches @libtorch",
                          "rule: `core` never uses `@libtorch` except through //core:torch_io")

  def test_an_alias_is_not_a_use(self):
    # An alias in `core` naming a program above it that uses LibTorch: a second name, not a use
    # (as //args:show_args names //tools:show_args).
    failures = self.check({"core/BUILD": """
package(default_visibility = ["//:above_core"])
cc_library(name = "core", srcs = ["core.cc"], hdrs = ["core.h"], deps = [":torch_io", "//base:util"])
cc_library(name = "torch_io", srcs = ["torch_io.cc"], deps = ["@libtorch//:torch"])
alias(name = "tool", actual = "//app:app")
""", "app/BUILD": """
cc_library(name = "app", deps = ["//core", "@libtorch//:torch"])
"""})
    self.assertEqual(failures, [])

  def test_public_library_package_fails(self):
    failures = self.check({"base/BUILD": """
package(default_visibility = ["//visibility:public"])
cc_library(name = "util", hdrs = ["util.h"])
"""})
    self.assertOneFailure(failures, "//base: default_visibility is ['//visibility:public']",
                          'it should be ["//:above_base"]')

  PUBLIC_README = README + """
## Outside use
<!-- public:begin -->
| target | what |
|---|---|
| `@loom//core` | the middle |
<!-- public:end -->
"""

  def test_listed_public_target_passes(self):
    failures = self.check({"README.md": self.PUBLIC_README, "core/BUILD": CLEAN["core/BUILD"].replace(
        'name = "core", ', 'name = "core", visibility = ["//visibility:public"], ')})
    self.assertEqual(failures, [])

  def test_public_target_not_listed_fails(self):
    failures = self.check({"core/BUILD": CLEAN["core/BUILD"].replace(
        'name = "core", ', 'name = "core", visibility = ["//visibility:public"], ')})
    self.assertOneFailure(failures, "//core:core: visibility is public, but README.md does not "
                          "list it for outside use")

  def test_listed_target_not_public_fails(self):
    failures = self.check({"README.md": self.PUBLIC_README})
    self.assertOneFailure(failures, "//core:core is listed in README.md for outside use but is "
                          "not public")

  def test_listed_target_missing_fails(self):
    failures = self.check({"README.md": self.PUBLIC_README.replace("@loom//core", "@loom//core:gone"),
                           "core/BUILD": CLEAN["core/BUILD"]})
    self.assertOneFailure(failures, "//core:gone is listed in README.md for outside use but no "
                          "BUILD file defines it")

  def test_listed_entry_that_is_no_label_fails(self):
    failures = self.check({"README.md": self.PUBLIC_README.replace("@loom//core", "@loom//core/..."),
                           "core/BUILD": CLEAN["core/BUILD"]})
    self.assertOneFailure(failures, "//core/... is listed in README.md for outside use but no "
                          "BUILD file defines it")

  def test_package_group_drift_fails(self):
    failures = self.check({"BUILD": ROOT_BUILD.replace('"//app/...", "//tool/..."]', '"//app/..."]')})
    self.assertOneFailure(failures, "//:above_core lists ['//app/...']",
                          "README.md's layers above 'core' (layer 2 of 3)")

  def test_package_missing_from_the_table_fails(self):
    failures = self.check({"extra/BUILD": 'cc_library(name = "x")\n'})
    self.assertTrue(any("//extra:x: package //extra is in no layer" in f for f in failures),
                    failures)

  def test_package_missing_from_the_data_fails(self):
    failures = self.check({"core/BUILD": """
package(default_visibility = ["//:above_core"])
cc_library(name = "core", srcs = ["core.cc"], hdrs = ["core.h"], deps = ["//base:util", "//gone:x"])
cc_library(name = "torch_io", srcs = ["torch_io.cc"], deps = ["@libtorch//:torch"])
"""})
    self.assertOneFailure(failures, "//core:core depends on //gone:x",
                          "//gone's BUILD file is not among the files given to the check")


class RealTreeTest(unittest.TestCase):
  """The repository itself, with a wrong-way dependency planted in //base."""

  PLANTED = "//base:file_util depends on //trainer:trainer: upward dependency from 'base' (layer "

  def test_base_depending_on_trainer_fails(self):
    root = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "tree")
    self.addCleanup(shutil.rmtree, os.path.dirname(root))
    shutil.copytree(".", root, symlinks=False, ignore=shutil.ignore_patterns("bazel-*", ".git"))
    _, before = check_layering.run(root, os.path.join(root, "README.md"))
    self.assertFalse(any(f.startswith(self.PLANTED) for f in before))
    path = os.path.join(root, "base", "BUILD")
    with open(path) as f:
      text = f.read()
    planted = text.replace('hdrs = ["file_util.h"],\n    deps = ["//third_party/absl"],',
                           'hdrs = ["file_util.h"],\n    deps = ["//third_party/absl", "//trainer"],')
    self.assertNotEqual(planted, text, "base/BUILD changed shape; update this test")
    os.chmod(path, 0o644)
    with open(path, "w") as f:
      f.write(planted)
    _, after = check_layering.run(root, os.path.join(root, "README.md"))
    planted_failures = [f for f in after if f.startswith(self.PLANTED)]
    self.assertEqual(len(planted_failures), 1, after)
    self.assertIn("to 'trainer' (layer", planted_failures[0])
    self.assertTrue(planted_failures[0].endswith("; rule: " + check_layering.RULE_LAYERING))
    for failure in sorted(set(after) - set(before)):
      print("with //base:file_util -> //trainer planted: FAIL " + failure)


if __name__ == "__main__":
  unittest.main()
