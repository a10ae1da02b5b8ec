/**
 * The Python runner: the script `python3 -c` runs for a Python tool, carried inside massgen as a string.
 *
 * It reads one JSON request on stdin, `{op, path, function, preset, context, arguments}`:
 * - `describe`: loads the function and prints `{description, parameters, takes, kwargs}`,
 *   its schema as MassGen makes it (the signature's parameters but `self`, `cls`,
 *   `*args`, `**kwargs`, the preset ones and the context ones, typed from their
 *   annotations, described from the docstring's `Args:` section; the
 *   description is the docstring's text before its sections).
 * - `call`: calls it with the preset arguments, the context ones it takes
 *   (`agent_cwd`, and those `@context_params` names) and the model's, awaiting a
 *   coroutine and taking the last item of a generator, and prints the result's
 *   text: the text blocks of an `ExecutionResult`, a string as it is, anything
 *   else as JSON.
 * The file is loaded as MassGen loads it (a `.py` path as a module named for
 * its stem, its folder first on `sys.path`; anything else imported as a
 * module). Where MassGen's package is not installed, the runner provides the
 * few names tool files import from it (`massgen.tool._result`: the result and
 * block classes; `massgen.tool._decorators`: `context_params`). What the
 * function prints goes to stderr; stdout carries only the result. A failure
 * ends the process with exit 1 and, as stderr's last line, `ERROR_MARK` and
 * one line saying what failed (an exception: its type and message).
 */

/** What the last line of stderr starts with when the runner failed; the rest of the line says why. */
export const ERROR_MARK = "massgen-python-tool-error: "

export const PYTHON_RUNNER = `
import asyncio, importlib, importlib.util, inspect, json, os, re, sys, types, typing
MARK = ${JSON.stringify(ERROR_MARK)}
out = sys.stdout
sys.stdout = sys.stderr

def fail(text):
    sys.stderr.write("\\n" + MARK + " ".join(str(text).split()) + "\\n")
    sys.stderr.flush()
    os._exit(1)

def shim():
    try:
        if importlib.util.find_spec("massgen.tool") is not None:
            return
    except Exception:
        pass
    from dataclasses import dataclass, field
    @dataclass
    class ContentBlock:
        block_type: str
        data: str
    class TextContent(ContentBlock):
        def __init__(self, data):
            super().__init__(block_type="text", data=data)
    class ImageContent(ContentBlock):
        def __init__(self, data):
            super().__init__(block_type="image", data=data)
    class AudioContent(ContentBlock):
        def __init__(self, data):
            super().__init__(block_type="audio", data=data)
    @dataclass
    class ExecutionResult:
        output_blocks: list
        meta_info: typing.Optional[dict] = None
        is_streaming: bool = False
        is_final: bool = True
        is_log: bool = False
        was_interrupted: bool = False
        result_id: str = ""
    def context_params(*names):
        def mark(fn):
            fn.__context_params__ = set(names)
            return fn
        return mark
    names = dict(ContentBlock=ContentBlock, TextContent=TextContent, ImageContent=ImageContent, AudioContent=AudioContent, ExecutionResult=ExecutionResult, context_params=context_params)
    for mod in ("massgen", "massgen.tool", "massgen.tool._result", "massgen.tool._decorators"):
        m = types.ModuleType(mod)
        m.__path__ = []
        m.__dict__.update(names)
        sys.modules[mod] = m

def load(path, name):
    if path.endswith(".py"):
        sys.path.insert(0, os.path.dirname(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(stem, path)
        if spec is None or spec.loader is None:
            fail("cannot load " + path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[stem] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(path)
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        fail(path + " has no function " + name)
    return fn

SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises?|Examples?|Notes?|Attributes|Warnings?|See Also|Todo)\\s*:\\s*$")
PARAM = re.compile(r"^(\\*{0,2}\\w+)\\s*(\\([^)]*\\))?\\s*:\\s*(.*)$")

def parse_doc(doc):
    lines = inspect.cleandoc(doc or "").splitlines()
    head, params, section, indent, current = [], {}, None, None, None
    for line in lines:
        m = SECTION.match(line.strip()) if not line.startswith((" ", "\\t")) else None
        if m:
            section, indent, current = m.group(1), None, None
            continue
        if section is None:
            head.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters", "Params") or not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        p = PARAM.match(line.strip()) if width == indent else None
        if p:
            current = p.group(1).lstrip("*")
            params[current] = p.group(3).strip()
        elif current is not None:
            params[current] = (params[current] + "\\n" + line.strip()).strip()
    text = "\\n".join(head).strip()
    short, _, long = text.partition("\\n")
    short, long = short.strip(), long.strip()
    return ("\\n\\n".join(x for x in (short, long) if x), params)

def schema_of(t):
    if t is inspect.Parameter.empty or t is typing.Any:
        return {}
    if t is None or t is type(None):
        return {"type": "null"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", bytes: "string"}
    if t in simple:
        return {"type": simple[t]}
    origin, args = typing.get_origin(t), typing.get_args(t)
    if t in (list, set, frozenset, tuple) or origin in (list, set, frozenset, tuple):
        s = {"type": "array", "items": schema_of(args[0]) if args else {}}
        if origin in (set, frozenset):
            s["uniqueItems"] = True
        return s
    if t is dict or origin is dict:
        return {"type": "object", "additionalProperties": schema_of(args[1]) if len(args) == 2 and args[1] is not typing.Any else True}
    if origin is typing.Union or type(t).__name__ == "UnionType":
        return {"anyOf": [schema_of(a) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    return {}

def describe(fn, preset, context):
    description, docs = parse_doc(fn.__doc__)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    hidden = set(preset) | set(context)
    props, required, takes, kwargs = {}, [], [], False
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind == p.VAR_KEYWORD:
            kwargs = True
            continue
        if name in ("self", "cls") or p.kind == p.VAR_POSITIONAL:
            continue
        takes.append(name)
        if name in hidden:
            continue
        s = dict(schema_of(hints.get(name, p.annotation)))
        if docs.get(name):
            s["description"] = docs[name]
        if p.default is p.empty:
            required.append(name)
        else:
            try:
                json.dumps(p.default)
                s["default"] = p.default
            except (TypeError, ValueError):
                pass
        props[name] = s
    parameters = {"type": "object", "properties": props}
    if required:
        parameters["required"] = required
    return {"description": description, "parameters": parameters, "takes": takes, "kwargs": kwargs}

def text_of(result):
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    blocks = getattr(result, "output_blocks", None)
    if isinstance(blocks, list):
        parts = []
        for b in blocks:
            kind = getattr(b, "block_type", "text")
            parts.append(str(getattr(b, "data", "")) if kind == "text" else "[massgen: a " + str(kind) + " block was left out]")
        return "\\n".join(parts)
    return json.dumps(result, default=str)

async def drain(value):
    last = None
    if inspect.isasyncgen(value):
        async for item in value:
            last = item
        return last
    if inspect.isgenerator(value):
        for item in value:
            last = item
        return last
    if inspect.isawaitable(value):
        return await value
    return value

def main():
    req = json.loads(sys.stdin.read())
    shim()
    fn = load(req["path"], req["function"])
    preset = req.get("preset") or {}
    marked = set(getattr(fn, "__context_params__", set()))
    context = {k: v for k, v in (req.get("context") or {}).items() if k in marked or k == "agent_cwd"}
    info = describe(fn, preset, marked | set(context))
    context = {k: v for k, v in context.items() if k in info["takes"] or info["kwargs"]}
    bad = [k for k in preset if k not in info["takes"] and not info["kwargs"]]
    if bad:
        fail("preset_args names " + ", ".join(bad) + ", which " + req["function"] + " does not take (it takes " + (", ".join(info["takes"]) or "nothing") + ")")
    if req["op"] == "describe":
        out.write(json.dumps(info))
        return
    args = req.get("arguments") or {}
    bad = [k for k in args if k not in info["takes"] and not info["kwargs"]]
    if bad:
        fail(req["function"] + " takes no argument " + ", ".join(bad) + " (it takes " + (", ".join(k for k in info["takes"] if k in info["parameters"]["properties"]) or "nothing") + ")")
    try:
        result = asyncio.run(drain(fn(**{**preset, **context, **args})))
    except BaseException as e:
        message = str(e).strip().splitlines()
        fail(type(e).__name__ + (": " + message[0] if message else ""))
    out.write(text_of(result))
    out.flush()

try:
    main()
except SystemExit:
    raise
except BaseException as e:
    message = str(e).strip().splitlines()
    fail(type(e).__name__ + (": " + message[0] if message else ""))
`
