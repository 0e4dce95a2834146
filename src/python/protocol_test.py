#!/usr/bin/env python3
"""The Python bootstrap against the `gpuscope run` protocol (src/core/run_protocol.h), so the two
cannot drift: the header is the one list, the bootstrap cannot include it, so this test parses
its tables and reads the bootstrap's source (ast, nothing imported or run):

- every environment variable the bootstrap reads is in kEnvironment, with the bootstrap among
  its readers, and every variable the table says the bootstrap reads, it reads; where the
  bootstrap gives a default, it is the table's;
- every NVTX prefix the bootstrap defines (_gpuscope_marks) is in kNvtxNames, written by the
  bootstrap, and every name the table says the bootstrap writes, it defines;
- the field marks it writes (each call of `host(...)` / `python_stats(...)`, keys in order) are
  exactly kFieldMarks.

It also checks C++ sources in src/ name no variable the table lacks (a string literal
"GPUSCOPE_..." outside tests). usage: protocol_test.py [unittest args]
"""
import ast
import glob
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
HEADER = os.path.join(SRC, "core", "run_protocol.h")
BOOT = os.path.join(HERE, "gpuscope_boot")

PARTIES = ["kUser", "kRun", "kInject", "kBlas", "kBootstrap", "kProgram", "kCore", "kGpuscope", "kLoader", "kTests"]


def parties(expr):
    """'kRun | kBootstrap' -> {'kRun', 'kBootstrap'}; '0' -> set()."""
    names = {p.strip() for p in expr.split("|")} - {"0"}
    unknown = names - set(PARTIES)
    if unknown:
        raise ValueError(f"unknown parties {unknown} in {expr!r}")
    return names


def c_strings(text):
    """The concatenation of the C string literals in text."""
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text))


class Header:
    """The tables of run_protocol.h."""

    def __init__(self, path=HEADER):
        with open(path) as f:
            text = re.sub(r"//[^\n]*", "", f.read())
        self.env = {}  # constant -> (name, set_by, read_by, default)
        for const, body in re.findall(r"inline constexpr EnvVar (k\w+)\{(.*?)\};", text, re.S):
            m = re.match(r'\s*"([^"]+)",\s*([\w|\s]+?),\s*([\w|\s]+?),\s*"([^"]*)",', body, re.S)
            if not m:
                raise ValueError(f"cannot read the row of {const}: {body!r}")
            self.env[const] = (m.group(1), parties(m.group(2)), parties(m.group(3)), m.group(4))
        listed = re.search(r"kEnvironment = \{(.*?)\};", text, re.S).group(1)
        self.environment = [c.strip() for c in listed.split(",") if c.strip()]
        self.names = {}  # constant -> (prefix, kind, exact, written_by, read_by)
        for const, body in re.findall(r"inline constexpr NvtxName (k\w+)\{(.*?)\};", text, re.S):
            m = re.match(r'\s*"([^"]+)",\s*NameKind::(k\w+),\s*(true|false),\s*([\w|\s]+?),\s*([\w|\s]+?),', body, re.S)
            if not m:
                raise ValueError(f"cannot read the row of {const}: {body!r}")
            self.names[const] = (m.group(1), m.group(2), m.group(3) == "true", parties(m.group(4)), parties(m.group(5)))
        listed = re.search(r"kNvtxNames = \{(.*?)\};", text, re.S).group(1)
        self.nvtx = [c.strip() for c in listed.split(",") if c.strip()]
        self.keys = dict(re.findall(r'inline constexpr std::string_view (kKey\w+) = "([^"]+)";', text))
        rows = re.search(r"kFieldMarks = \{(.*)\};", text, re.S).group(1)
        self.field_marks = set()  # (prefix, (key, ...))
        for mark, keys in re.findall(r"FieldMark\{\s*&(k\w+),\s*\{([^}]*)\}", rows):
            self.field_marks.add((self.names[mark][0], tuple(self.keys[k.strip()] for k in keys.split(",") if k.strip())))
        self.field_rows = len(re.findall(r"FieldMark\{", rows))


class Bootstrap:
    """What the bootstrap's source uses: environment variables (with the defaults it gives),
    NVTX prefixes, field marks."""

    ENV_HELPERS = {"env_int", "env_seconds"}
    FIELD_MARKERS = {"host": "HOST", "python_stats": "STATS"}

    def __init__(self, folder=BOOT):
        self.env = {}  # name -> set of defaults given (None: none given)
        self.prefixes = {}  # _gpuscope_marks constant -> value
        self.field_marks = []  # (constant, (key, ...))
        for path in sorted(glob.glob(os.path.join(folder, "*.py"))):
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    self._call(node)
                elif isinstance(node, ast.Subscript) and self._is_environ(node.value):
                    if isinstance(node.slice, ast.Constant):
                        self.env.setdefault(node.slice.value, set()).add(None)
            if os.path.basename(path) == "_gpuscope_marks.py":
                for node in tree.body:
                    if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                            and isinstance(node.value.value, str) and node.value.value.endswith("#")):
                        self.prefixes[node.targets[0].id] = node.value.value

    @staticmethod
    def _is_environ(node):
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ")

    @staticmethod
    def _name(func):
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None

    def _call(self, node):
        name = self._name(node.func)
        if isinstance(node.func, ast.Call) and self._name(node.func.func) == "guarded" and node.func.args:
            name = self._name(node.func.args[0])  # guarded(marks.host)(key=value, ...)
        environ_get = isinstance(node.func, ast.Attribute) and node.func.attr == "get" and self._is_environ(node.func.value)
        if (environ_get or name in self.ENV_HELPERS) and node.args and isinstance(node.args[0], ast.Constant):
            default = None
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                default = str(node.args[1].value)
            elif name == "env_int":
                default = "0"
            self.env.setdefault(node.args[0].value, set()).add(default)
        if name in self.FIELD_MARKERS:
            if any(k.arg is None for k in node.keywords) or node.args:
                raise ValueError(f"line {node.lineno}: a field mark's keys must be written out (key=value)")
            self.field_marks.append((self.FIELD_MARKERS[name], tuple(k.arg for k in node.keywords)))


class ProtocolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.header = Header()
        cls.boot = Bootstrap()

    def test_header_tables_are_whole(self):
        # Every constant is listed once in its table, every name once.
        self.assertEqual(sorted(self.header.environment), sorted(self.header.env))
        self.assertEqual(len(set(self.header.environment)), len(self.header.environment))
        names = [row[0] for row in self.header.env.values()]
        self.assertEqual(len(set(names)), len(names), names)
        self.assertEqual(sorted(self.header.nvtx), sorted(self.header.names))
        self.assertEqual(len(self.header.field_marks), self.header.field_rows, "a field mark listed twice")
        for const, (name, set_by, read_by, _) in self.header.env.items():
            self.assertTrue(set_by and read_by, f"{name}: who sets it and who reads it")

    def test_environment_the_bootstrap_reads_is_in_the_table(self):
        table = {row[0]: row for row in self.header.env.values()}
        for name, defaults in sorted(self.boot.env.items()):
            self.assertIn(name, table, f"the bootstrap reads {name}, which run_protocol.h does not list")
            _, _, read_by, default = table[name]
            self.assertIn("kBootstrap", read_by, f"{name}: the bootstrap reads it; add kBootstrap to its readers")
            for d in defaults - {None}:
                self.assertEqual(d, default, f"{name}: the bootstrap's default {d!r}, the table's {default!r}")
        for name, _, read_by, _ in table.values():
            if "kBootstrap" in read_by:
                self.assertIn(name, self.boot.env, f"run_protocol.h says the bootstrap reads {name}; it does not")

    def test_nvtx_names_the_bootstrap_writes_are_in_the_table(self):
        written = {prefix for prefix, _, _, writers, _ in self.header.names.values() if "kBootstrap" in writers}
        self.assertEqual(set(self.boot.prefixes.values()), written)

    def test_field_marks_are_the_tables(self):
        mine = {(self.boot.prefixes[const], keys) for const, keys in self.boot.field_marks}
        self.assertEqual(mine, self.header.field_marks)
        self.assertGreaterEqual(len(self.boot.field_marks), len(mine))

    def test_cpp_sources_name_only_listed_variables(self):
        listed = {row[0] for row in self.header.env.values()}
        found = {}
        for path in glob.glob(os.path.join(SRC, "**", "*.[ch]*"), recursive=True):
            if re.search(r"_test\.(cpp|h)$|_testing\.h$", path) or path == HEADER:
                continue
            with open(path, errors="replace") as f:
                for name in re.findall(r'"(GPUSCOPE_[A-Z0-9_]+)"', f.read()):
                    found.setdefault(name, os.path.relpath(path, SRC))
        for name, path in sorted(found.items()):
            self.assertIn(name, listed, f"{path} names {name}, which run_protocol.h does not list")

    def test_the_parsers_see_what_they_must(self):
        # The checks above are only as good as the parsing: a bootstrap with a stray variable,
        # a renamed prefix or an extra key must fail them.
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "_gpuscope_marks.py"), "w") as f:
                f.write('HOST = "gpuscope.host#"\nX = "gpuscope.other#"\n')
            with open(os.path.join(d, "_gpuscope_x.py"), "w") as f:
                f.write('import os\nos.environ.get("GPUSCOPE_NOT_A_KNOB", "1")\nenv_seconds("GPUSCOPE_FALLBACK_S", 11)\n'
                        'marks.host(cpus=1, not_a_key=2)\nguarded(marks.python_stats)(ranges=1)\n')
            boot = Bootstrap(d)
        self.assertEqual(boot.env["GPUSCOPE_NOT_A_KNOB"], {"1"})
        self.assertEqual(boot.env["GPUSCOPE_FALLBACK_S"], {"11"})
        self.assertEqual(boot.prefixes, {"HOST": "gpuscope.host#", "X": "gpuscope.other#"})
        self.assertEqual(sorted(boot.field_marks), [("HOST", ("cpus", "not_a_key")), ("STATS", ("ranges",))])
        self.assertNotIn(("gpuscope.host#", ("cpus", "not_a_key")), self.header.field_marks)
        self.assertIn(("gpuscope.host#", ("cpus", "torch_threads")), self.header.field_marks)
        self.assertEqual(self.header.env["kEnvFallbackS"][3], "10")


if __name__ == "__main__":
    unittest.main()
