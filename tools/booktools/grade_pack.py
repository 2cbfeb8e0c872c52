"""A student's answer carried out of their notebook's process into a clean one.

The grader never trusts a verdict computed inside the student's kernel: there the student can
have replaced ``book.checks.check``, an exercise's reference or the library itself. It takes the
answer *object* out instead (``pack``, run in the student's process) and rebuilds it in a fresh
process that imported nothing the student touched (``unpack``), where the library's own check
runs on it.

A function defined in the notebook travels as its code (``marshal``, the same interpreter on
both sides), its defaults and closure, and, by name, every global its code refers to, followed
transitively: helper functions of the notebook by value, modules by name (imported fresh: a
monkeypatched ``rc`` arrives as the real one), library functions and classes by module and
qualified name, plain data (numbers, strings, tensors, arrays) by ``pickle``. Anything else
arrives as "unavailable": calling it raises, and the check reports the error.
A value answer (a prediction, a number read off a figure) is reduced to a plain ``None``, bool,
int, float or str first, so that an object with a doctored ``__eq__`` cannot pass a comparison.
"""

from __future__ import annotations

import builtins
import importlib
import marshal
import pickle
import types

PLAIN = (type(None), bool, int, float, str, type(Ellipsis))
SUSPECT_NAMES = {"checks", "EXERCISES", "QUESTIONS"}  # an answer that reaches into the checks


def plain_value(value):
    """``value`` as a plain None/bool/int/float/str, or ``("unusable", description)``."""
    if type(value) in PLAIN:
        return value
    item = getattr(value, "item", None)  # numpy and torch scalars
    try:
        got = item() if callable(item) else value
        if type(got) in PLAIN:
            return got
        got = float(got)
        if type(got) is float:
            return got
    except Exception:
        pass
    return ("unusable", f"a {type(value).__name__}, not a number or a choice")


def _code_names(code: types.CodeType) -> set[str]:
    """Every global name a code object (and the code nested in it) may look up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _by_reference(obj):
    """``("ref", module, qualname)`` if importing gives back ``obj`` itself, else ``None``."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "__main__":
        return None
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:
        return None
    return ("ref", module, qualname) if found is obj else None


def pack_namespace(ns: dict, name: str) -> dict:
    """What ``unpack`` needs to rebuild ``ns[name]`` (a function of the notebook) elsewhere."""
    todo, packed = [name], {}
    while todo:
        n = todo.pop()
        if n in packed or n not in ns:
            continue
        packed[n] = _pack(ns[n], ns, todo, depth=0)
    return {"root": name, "globals": packed}


def _pack(obj, ns, todo, depth):
    if depth > 50:
        return ("unavailable", "nested too deeply")
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    if isinstance(obj, types.FunctionType) and obj.__globals__ is ns:
        todo.extend(_code_names(obj.__code__))
        closure = [
            _pack(c.cell_contents, ns, todo, depth + 1) if _filled(c) else ("empty",)
            for c in obj.__closure__ or ()
        ]
        defaults = [_pack(d, ns, todo, depth + 1) for d in obj.__defaults__ or ()]
        kwdefaults = {
            k: _pack(v, ns, todo, depth + 1) for k, v in (obj.__kwdefaults__ or {}).items()
        }
        return (
            "function",
            marshal.dumps(obj.__code__),
            obj.__name__,
            defaults,
            kwdefaults,
            closure,
        )
    if type(obj) in PLAIN:
        return ("data", pickle.dumps(obj))
    ref = _by_reference(obj)
    if ref is not None:
        return ref
    if str(getattr(obj, "__module__", "")).startswith("rankbook.checks"):
        return ("checks", f"{obj.__module__}.{getattr(obj, '__qualname__', type(obj).__name__)}")
    if isinstance(obj, (types.FunctionType, type)):
        return ("unavailable", f"{type(obj).__name__} {getattr(obj, '__qualname__', '?')}")
    try:
        return ("data", pickle.dumps(obj))
    except Exception as err:
        return ("unavailable", f"a {type(obj).__name__} ({type(err).__name__})")


def _filled(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


class Unavailable:
    """Stands for a global the grader could not carry over; using it raises."""

    def __init__(self, what):
        self.what = what

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"the grader could not carry {self.what} out of the notebook")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"the grader could not carry {self.what} out of the notebook")


def unpack(packed: dict):
    """The function ``pack_namespace`` packed, rebuilt in a fresh namespace of this process;
    returns ``(function, suspect)``: ``suspect`` names what in its code reaches into the checks."""
    ns = {"__builtins__": builtins, "__name__": "__main__"}
    suspect = set()
    for name, item in packed["globals"].items():
        ns[name] = _unpack(item, ns, suspect)
    return ns.get(packed["root"]), sorted(suspect)


def _unpack(item, ns, suspect):
    kind = item[0]
    if kind == "module":
        if item[1].startswith("rankbook.checks"):
            suspect.add(item[1])
        try:
            return importlib.import_module(item[1])
        except Exception:
            return Unavailable(f"module {item[1]}")
    if kind == "ref":
        if item[1].startswith("rankbook.checks"):
            suspect.add(f"{item[1]}.{item[2]}")
        try:
            obj = importlib.import_module(item[1])
            for part in item[2].split("."):
                obj = getattr(obj, part)
            return obj
        except Exception:
            return Unavailable(f"{item[1]}.{item[2]}")
    if kind == "data":
        try:
            return pickle.loads(item[1])
        except Exception:
            return Unavailable("a value")
    if kind == "function":
        _, code, name, defaults, kwdefaults, closure = item
        code = marshal.loads(code)
        suspect.update(SUSPECT_NAMES & _code_names(code))
        cells = tuple(
            types.CellType() if c[0] == "empty" else types.CellType(_unpack(c, ns, suspect))
            for c in closure
        )
        fn = types.FunctionType(
            code, ns, name, tuple(_unpack(d, ns, suspect) for d in defaults) or None, cells or None
        )
        fn.__kwdefaults__ = {k: _unpack(v, ns, suspect) for k, v in kwdefaults.items()} or None
        return fn
    if kind == "checks":  # an object of the checks' own (a reference, a known mistake)
        suspect.add(item[1])
    return Unavailable(item[1] if len(item) > 1 else "an object")
