"""Load and validate rule files and shipped packs into a :class:`RuleSet`.

Everything is checked here, before any trace is read, and every problem is one line:
``FILE:LINE: rule 'ID': key 'KEY': what``. A file is checked to its end: every rule,
waiver, phase and top-level key with a problem gets its line, gathered in one
:class:`~nsysdiff.errors.RuleErrors`; only a file that is no rule file at all (not YAML,
not a mapping, no or another ``version``) stops at its first.
Files are composed with PyYAML's safe loader and every tag is checked against the safe
constructors first, so a rule file can't build Python objects or run code.
"""

from __future__ import annotations

import difflib
import importlib.resources
import re
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nsysdiff.errors import RuleError, RuleErrors, UsageError
from nsysdiff.fingerprint.noise import NoiseProfile
from nsysdiff.rules import noise_limits
from nsysdiff.rules import options as opt
from nsysdiff.rules import waivers as waiver_section
from nsysdiff.rules.kinds import KINDS
from nsysdiff.rules.model import Kind, OptionError, Rule, RuleSet, Waiver
from nsysdiff.rules.report import Level
from nsysdiff.safe import yamldoc
from nsysdiff.trace.inputs import NSYS_REPORT_MAGIC, REPORT_SUFFIXES, SQLITE_MAGIC

VERSION = 1
if TYPE_CHECKING:
    from importlib.abc import Traversable

PACKAGE = "nsysdiff.packs"
TOP_KEYS = ("version", "description", "extends", "rules", "waivers", "phases", "noise_profile", "steps")
RULE_KEYS = ("id", "kind", "level", "message", "description")
LEVELS = tuple(level.value for level in Level)
MAX_EXTENDS_DEPTH = 16  # files extending files; the shipped packs need 2
MAX_FILES = 64  # files read for one rule set, packs included
MAX_RULES = 1_000  # rules, and also waivers, in one rule set
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_YAML_TAG = "tag:yaml.org,2002:"


def packs_root() -> Traversable:
    """Where the shipped packs are: installed as ``nsysdiff.packs``, or ``rules/`` in a checkout.

    An installed package maps the repository's top-level ``rules/`` to ``nsysdiff.packs``;
    code imported straight from a source tree (``python -m pytest`` in a checkout puts
    it first on ``sys.path``) has no such package, so it reads ``rules/`` directly.
    """
    # The checkout's own packs first: an editable install of another checkout maps
    # ``nsysdiff.packs`` to that checkout's rules/, which would silently shadow these.
    local = Path(__file__).resolve().parents[2] / "rules"
    if (local / "default.yaml").is_file():
        return local
    try:
        return importlib.resources.files(PACKAGE)
    except ModuleNotFoundError:
        return local


def pack_names() -> tuple[str, ...]:
    root = packs_root()
    return tuple(sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml")))


def is_pack(spec: str) -> bool:
    return spec in pack_names()


def under(spec: str, directory: Path) -> Path:
    """``spec`` relative to ``directory``; :class:`ValueError` (the reason) when it is
    absolute or leaves the directory once symlinks are resolved."""
    path = Path(spec)
    if path.is_absolute():
        raise ValueError("an absolute path")
    path = directory / path
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        raise ValueError("outside the including file's directory") from None
    except (OSError, RuntimeError) as e:  # a name over 255 bytes, a symlink loop (RuntimeError)
        raise ValueError(f"an unusable path ({_os_reason(e)})") from None
    return path


def _os_reason(e: BaseException) -> str:
    return (e.strerror if isinstance(e, OSError) and e.strerror else "a symlink loop") or str(e)


def _exists(path: Path) -> bool:
    """Whether ``path`` is there; :class:`ValueError` for a name the system refuses."""
    try:
        return path.exists()
    except (OSError, RuntimeError) as e:
        raise ValueError(f"an unusable path ({_os_reason(e)})") from None


@dataclass(frozen=True, slots=True)
class Source:
    identity: str  # "pack:NAME" or the resolved path: loading the same thing twice is a no-op
    label: str  # how messages name it
    text: str
    directory: Path | None  # relative `extends:` paths resolve against it


def pack_source(name: str) -> Source:
    text = packs_root().joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    return Source(f"pack:{name}", f"rules/{name}.yaml", text, None)


def resolve(spec: str, directory: Path | None) -> Source | None:
    """A shipped pack by name, else a file (relative to ``directory`` when given).

    ``directory`` is the including file's: a file named by ``extends:`` must lie under it
    once symlinks are resolved (no absolute path, no ``../`` or symlink escape), so that
    a rule file from another job can't make nsysdiff read files outside its own tree.
    Raises :class:`ValueError` (the reason) for a path that leaves it.
    """
    if is_pack(spec):
        return pack_source(spec)
    path = Path(spec) if directory is None else under(spec, directory)
    if not _exists(path):
        return None
    trace = trace_given_as_rules(str(path))
    if trace is not None:
        raise ValueError(trace)
    text = yamldoc.read_text(path, str(path), RuleError)
    try:
        identity = str(path.resolve())
    except (OSError, RuntimeError) as e:
        raise ValueError(f"an unusable path ({_os_reason(e)})") from None
    return Source(identity, str(path), text, path.parent)


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG) :] if tag.startswith(_YAML_TAG) else tag


def _as_written(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return str(node.value)
    if isinstance(node, SequenceNode):
        return "[" + ", ".join(_as_written(n) for n in node.value) + "]"
    if isinstance(node, MappingNode):
        return "{" + ", ".join(f"{_as_written(k)}: {_as_written(v)}" for k, v in node.value) + "}"
    return "?"


def _close(word: str, known: Sequence[str]) -> str:
    """``; did you mean 'step-gpu-time'?`` where one of ``known`` is close, else nothing."""
    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _hint(word: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(known)


class _File:
    """One parsed YAML document, with the helpers that turn its problems into messages."""

    def __init__(self, source: Source) -> None:
        self.label = source.label
        node = yamldoc.compose(source.text, self.label, RuleError)
        self._loader = yamldoc.constructor()
        if node is None:
            raise RuleError(f"{self.label}:1: the file is empty (a rule file is a mapping with 'version: {VERSION}')")
        self._scan(node, set())
        self.root: Node = node
        self.errors: list[str] = []

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Note the problem of one part (a rule, a waiver, a key) and go on to the next."""
        try:
            yield
        except RuleError as e:
            self.errors.extend(e.lines)

    def fail(self, at: Node | int, where: str | None, key: str | None, what: str) -> NoReturn:
        parts = [f"{self.label}:{at if isinstance(at, int) else _line(at)}"]
        if where:
            parts.append(where)
        if key is not None:
            parts.append(f"key {key!r}")
        parts.append(what)
        raise RuleError(": ".join(parts))

    def _scan(self, node: Node, seen: set[int]) -> None:
        """Reject every tag the safe constructor doesn't know, before building anything."""
        if id(node) in seen:
            return
        seen.add(id(node))
        if node.tag not in yamldoc.TAGS:
            self.fail(
                node,
                None,
                None,
                f"tag {_tag(node.tag)!r} is not allowed: rule files are plain YAML",
            )
        if isinstance(node, SequenceNode):
            for child in node.value:
                self._scan(child, seen)
        elif isinstance(node, MappingNode):
            for k, v in node.value:
                self._scan(k, seen)
                self._scan(v, seen)

    def value(self, node: Node, where: str | None, key: str | None) -> Any:
        try:
            return self._loader.construct_object(node, deep=True)
        except yaml.YAMLError as e:
            self.fail(node, where, key, f"can't read the value ({e})")

    def mapping(self, node: Node, where: str, item: str, keys: str) -> MappingNode:
        """``node`` when it is a mapping (of ``keys``, as the error names them)."""
        if not isinstance(node, MappingNode):
            v = self.value(node, where, None)
            self.fail(node, where, None, f"{item} must be a mapping ({keys}), not {opt.type_name(v)}")
        return node

    def pairs(self, node: MappingNode, where: str | None) -> list[tuple[str, Node, Node]]:
        out: list[tuple[str, Node, Node]] = []
        first: dict[str, int] = {}
        for knode, vnode in node.value:
            k = self.value(knode, where, None)
            if not isinstance(k, str):
                self.fail(knode, where, None, f"keys must be strings, got {opt.type_name(k)}")
            if k in first:
                self.fail(knode, where, k, f"duplicate key (first on line {first[k]})")
            first[k] = _line(knode)
            out.append((k, knode, vnode))
        return out


class _Loader:
    def __init__(self) -> None:
        self.rules: dict[str, Rule] = {}
        self.waivers: list[Waiver] = []
        self.phases: dict[str, tuple[str, ...]] = {}
        self.loaded: set[str] = set()
        self.files: list[str] = []
        self.noise: NoiseProfile | None = None
        self.steps: tuple[str, ...] = ()
        self.broken: set[str] = set()  # ids of rules with problems

    def load(self, src: Source, stack: tuple[Source, ...] = ()) -> None:
        if src.identity in self.loaded:
            return  # a pack reached twice (two specs, or a diamond of extends)
        f = _File(src)
        top = self._top(f)
        if "description" in top:
            with f.collecting():
                self._string(f, top["description"][1], None, "description")
        if "extends" in top:
            with f.collecting():
                for spec, node in self._extends(f, top["extends"][1]):
                    with f.collecting():
                        self.load(self._extended(f, src, stack, spec, node), (*stack, src))
        if "rules" in top:
            with f.collecting():
                self._rules(f, top["rules"][1])
        if "waivers" in top:
            with f.collecting():
                self._waivers(f, top["waivers"][1])
        if "phases" in top:
            with f.collecting():
                self._phases(f, top["phases"][1])
        if "noise_profile" in top:
            with f.collecting():
                self.noise = self._noise_profile(f, src, top["noise_profile"][1])
        if "steps" in top:
            with f.collecting():
                self.steps = self._steps(f, top["steps"][1])
        self.loaded.add(src.identity)
        self.files.append(src.label)
        if f.errors:
            raise RuleErrors(tuple(f.errors))

    def _top(self, f: _File) -> dict[str, tuple[Node, Node]]:
        """The top-level keys of a rule file, checked: a mapping of known keys and a
        supported version."""
        if not isinstance(f.root, MappingNode):
            what = "a list" if isinstance(f.root, SequenceNode) else "a scalar"
            f.fail(
                f.root,
                None,
                None,
                f"the document must be a mapping (version, rules, ...), not {what}",
            )
        top = {k: (kn, vn) for k, kn, vn in f.pairs(f.root, None)}
        if "version" not in top:
            # Before any key is named: a file without it may not be a rule file at all,
            # and its content is not ours to echo.
            f.fail(f.root, None, "version", f"missing required key (add 'version: {VERSION}')")
        for k, (kn, _) in top.items():
            if k not in TOP_KEYS:
                with f.collecting():  # the known keys are still checked
                    f.fail(kn, None, k, f"unknown top-level key ({_hint(k, TOP_KEYS)})")
        vnode = top["version"][1]
        version = f.value(vnode, None, "version")
        if version != VERSION or isinstance(version, bool):
            f.fail(
                vnode,
                None,
                "version",
                f"unsupported version {version!r} (this nsysdiff reads version {VERSION})",
            )
        return top

    def _extended(self, f: _File, src: Source, stack: tuple[Source, ...], spec: str, node: Node) -> Source:
        """The file one ``extends`` entry of ``src`` names, within the limits of depth,
        count and place, and not already on the chain of files extending it."""
        if len(stack) + 1 >= MAX_EXTENDS_DEPTH:
            f.fail(node, None, "extends", f"more than {MAX_EXTENDS_DEPTH} files extend each other")
        if len(self.loaded) + len(stack) + 1 >= MAX_FILES:
            f.fail(node, None, "extends", f"more than {MAX_FILES} rule files in one rule set")
        try:
            # A shipped pack extends shipped packs only.
            target = (
                resolve(spec, src.directory)
                if src.directory is not None
                else (pack_source(spec) if is_pack(spec) else None)
            )
        except ValueError as e:
            f.fail(
                node,
                None,
                "extends",
                f"{spec!r} is {e}: extends names a shipped pack or a file under the including file's directory",
            )
        if target is None:
            f.fail(
                node,
                None,
                "extends",
                f"{spec!r} names no shipped pack ({', '.join(pack_names())}) and no file",
            )
        chain = (*stack, src)
        if any(s.identity == target.identity for s in chain):
            start = next(i for i, s in enumerate(chain) if s.identity == target.identity)
            cycle = " -> ".join(s.label for s in (*chain[start:], target))
            f.fail(node, None, "extends", f"extends cycle: {cycle}")
        return target

    def _string(self, f: _File, node: Node, where: str | None, key: str) -> str:
        v = f.value(node, where, key)
        try:
            return opt.string(v)
        except ValueError as e:
            f.fail(node, where, key, str(e))

    def _noise_profile(self, f: _File, src: Source, node: Node) -> NoiseProfile:
        """The profile a rule file names, read and validated now, before any trace."""
        from nsysdiff.fingerprint import noise

        spec = self._string(f, node, None, "noise_profile")
        if src.directory is None:
            f.fail(node, None, "noise_profile", "a shipped pack can't name a noise profile")
        try:
            path = under(spec, src.directory)
        except ValueError as e:
            f.fail(
                node,
                None,
                "noise_profile",
                f"{spec!r} is {e}: a noise profile must lie under the rule file's directory",
            )
        try:
            is_file = _exists(path) and path.is_file()
        except ValueError as e:
            f.fail(node, None, "noise_profile", f"{spec!r} is {e}")
        if not is_file:
            f.fail(
                node, None, "noise_profile", f"{spec!r}: no such file (make one with `nsysdiff noise RUN... -o FILE`)"
            )
        return noise.load(path)

    def _extends(self, f: _File, node: Node) -> list[tuple[str, Node]]:
        items = node.value if isinstance(node, SequenceNode) else [node]
        out = []
        for item in items:
            v = f.value(item, None, "extends")
            if not isinstance(v, str) or not v:
                f.fail(
                    item,
                    None,
                    "extends",
                    f"expected a pack name or a file path, got {opt.type_name(v)}",
                )
            out.append((v, item))
        return out

    def _items(self, f: _File, node: Node, key: str, held: int) -> list[Node]:
        """The items of the top-level list ``key`` (none for null), within the bound on a
        rule set with ``held`` of them already."""
        if not isinstance(node, SequenceNode):
            v = f.value(node, None, key)
            if v is None:
                return []
            f.fail(node, None, key, f"expected a list of {key}, got {opt.type_name(v)}")
        if len(node.value) + held > MAX_RULES:
            f.fail(node, None, key, f"more than {MAX_RULES:,} {key} in one rule set")
        return list(node.value)

    def _rules(self, f: _File, node: Node) -> None:
        seen: dict[str, int] = {}
        for index, rnode in enumerate(self._items(f, node, "rules", len(self.rules)), 1):
            with f.collecting():
                rule = self._rule(f, rnode, index, seen)
                if rule is not None:
                    self.rules[rule.id] = rule  # redefining an extended rule replaces it in place

    def _rule(self, f: _File, node: Node, index: int, seen: dict[str, int]) -> Rule | None:
        """The rule, or None when its problems were noted (``f.errors``)."""
        where = f"rule #{index}"
        node = f.mapping(node, where, "a rule", "id, kind, ...")
        pairs = f.pairs(node, where)
        by = {k: (kn, vn) for k, kn, vn in pairs}
        if "id" not in by:
            f.fail(node, where, "id", "missing required key")
        idnode = by["id"][1]
        rid = f.value(idnode, where, "id")
        if not isinstance(rid, str) or not _ID.match(rid):
            f.fail(
                idnode,
                where,
                "id",
                f"an id is letters, digits, '-', '_' and '.', got {opt.type_name(rid)}",
            )
        where = f"rule {rid!r}"
        if rid in seen:
            f.fail(idnode, where, "id", f"duplicate id (first defined on line {seen[rid]})")
        seen[rid] = _line(idnode)
        # A waiver of a rule with problems is not reported as naming no rule.
        self.broken.add(rid)
        if "kind" not in by:
            f.fail(node, where, "kind", "missing required key")
        knode = by["kind"][1]
        kname = f.value(knode, where, "kind")
        if not isinstance(kname, str) or kname not in KINDS:
            shown = repr(kname) if isinstance(kname, str) else opt.type_name(kname)
            f.fail(knode, where, "kind", f"unknown kind {shown} (kinds: {', '.join(sorted(KINDS))})")
        kind = KINDS[kname]
        before = len(f.errors)
        level = Level.ERROR
        if "level" in by:
            lnode = by["level"][1]
            with f.collecting():
                try:
                    level = Level(opt.choice(LEVELS)(f.value(lnode, where, "level")))
                except ValueError as e:
                    f.fail(lnode, where, "level", str(e))
        message = description = ""
        with f.collecting():
            message = self._string(f, by["message"][1], where, "message") if "message" in by else ""
        with f.collecting():
            description = self._string(f, by["description"][1], where, "description") if "description" in by else ""
        built = self._options(f, node, where, kind, pairs)
        if built is None or len(f.errors) > before:
            return None
        options, settings = built
        self.broken.discard(rid)
        return Rule(
            id=rid,
            kind=kind.name,
            level=level,
            message=message,
            description=description,
            options=options,
            settings=settings,
            source=f.label,
            line=_line(node),
        )

    def _options(
        self, f: _File, node: MappingNode, where: str, kind: Kind, pairs: list[tuple[str, Node, Node]]
    ) -> tuple[Any, tuple[tuple[str, str], ...]] | None:
        """A rule's options built by its kind, and its settings as written; None when the
        problems of its options were noted (``f.errors``)."""
        parsed: dict[str, Any] = {}
        settings: list[tuple[str, str]] = []
        known = (*RULE_KEYS, *(o.name for o in kind.options))
        before = len(f.errors)
        given = {k for k, _, _ in pairs}
        for k, kn, vn in pairs:
            if k in RULE_KEYS:
                continue
            with f.collecting():
                option = kind.option(k)
                if option is None:
                    f.fail(kn, where, k, f"unknown option for kind {kind.name!r} ({_hint(k, known)})")
                try:
                    parsed[k] = option.parse(f.value(vn, where, k))
                except ValueError as e:
                    f.fail(vn, where, k, str(e))
                settings.append((k, _as_written(vn)))
        for option in kind.options:
            # An option given with a bad value has its line already, not "missing".
            if option.required and option.name not in given:
                with f.collecting():
                    f.fail(node, where, option.name, "missing required option")
        if len(f.errors) > before:
            return None
        values = {o.name: parsed.get(o.name, o.default) for o in kind.options}
        try:
            return kind.build(values, frozenset(parsed)), tuple(settings)
        except OptionError as e:
            by = {k: vn for k, _, vn in pairs}
            f.fail(by[e.key] if e.key is not None and e.key in by else node, where, e.key, e.message)

    def _waivers(self, f: _File, node: Node) -> None:
        for index, wnode in enumerate(self._items(f, node, "waivers", len(self.waivers)), 1):
            with f.collecting():
                self._waiver(f, wnode, f"waiver #{index}")

    def _waiver(self, f: _File, wnode: Node, where: str) -> None:
        wnode = f.mapping(wnode, where, "a waiver", "rule, subject, reason, expires")
        values: dict[str, Any] = {}
        given = set()
        before = len(f.errors)
        for k, kn, vn in f.pairs(wnode, where):
            given.add(k)
            with f.collecting():
                option = next((o for o in waiver_section.OPTIONS if o.name == k), None)
                if option is None:
                    f.fail(
                        kn,
                        where,
                        k,
                        f"unknown key ({_hint(k, [o.name for o in waiver_section.OPTIONS])})",
                    )
                try:
                    values[k] = option.parse(f.value(vn, where, k))
                except ValueError as e:
                    f.fail(vn, where, k, str(e))
        for option in waiver_section.OPTIONS:
            if option.required and option.name not in given:
                with f.collecting():
                    f.fail(wnode, where, option.name, "missing required key")
        if len(f.errors) > before:
            return
        if ("subject" in values) == ("subject_regex" in values):
            f.fail(
                wnode,
                where,
                "subject",
                "give exactly one of 'subject' (exact) or 'subject_regex'",
            )
        self.waivers.append(
            Waiver(
                rule=values["rule"],
                subject=values.get("subject"),
                subject_regex=values.get("subject_regex"),
                reason=values["reason"],
                expires=values["expires"],
                source=f.label,
                line=_line(wnode),
            )
        )

    def _phases(self, f: _File, node: Node) -> None:
        if not isinstance(node, MappingNode):
            v = f.value(node, None, "phases")
            if v is None:
                return
            f.fail(
                node,
                None,
                "phases",
                f"expected a mapping of phase name to NVTX regexes, got {opt.type_name(v)}",
            )
        for name, _, vn in f.pairs(node, "phases"):
            with f.collecting():
                v = f.value(vn, "phases", name)
                if not isinstance(v, list) or not v:
                    f.fail(
                        vn,
                        "phases",
                        name,
                        f"expected a non-empty list of NVTX regexes, got {opt.type_name(v)}",
                    )
                try:
                    self.phases[name] = tuple(p.pattern for p in opt.regex_list(v))
                except ValueError as e:
                    f.fail(vn, "phases", name, str(e))

    def _steps(self, f: _File, node: Node) -> tuple[str, ...]:
        """``steps: {range: NAME or [NAME, ...]}``: the step range, in the ``--per`` syntax
        (``NAME[@DOMAIN]``, each part equal to the range's or an RE2 regex matching all of it)."""
        from nsysdiff.fingerprint.scope import parse_pattern

        if not isinstance(node, MappingNode):
            got = opt.type_name(f.value(node, None, "steps"))
            f.fail(node, None, "steps", f"expected a mapping with the key 'range', got {got}")
        pairs = {k: vn for k, _, vn in f.pairs(node, "steps")}
        for k in pairs:
            if k != "range":
                f.fail(node, "steps", k, f"unknown key ({_hint(k, ('range',))})")
        if "range" not in pairs:
            f.fail(node, "steps", "range", "missing required key (the NVTX range whose instances are steps)")
        v = f.value(pairs["range"], "steps", "range")
        items = v if isinstance(v, list) else [v]
        if not items or not all(isinstance(x, str) and x.strip() for x in items):
            got = opt.type_name(v)
            f.fail(pairs["range"], "steps", "range", f"expected a range name or a non-empty list of them, got {got}")
        for x in items:
            name, at, domain = x.rpartition("@")
            try:
                # The rule-file wording of a bad regex first; parse_pattern refuses it too.
                for part in (name, domain) if at else (x,):
                    if part:
                        opt.regex(part)
                parse_pattern(x, "steps: range:")
            except (ValueError, UsageError) as e:
                f.fail(pairs["range"], "steps", "range", str(e))
        return tuple(items)


def load_rules(specs: Sequence[str]) -> RuleSet:
    """Load shipped packs (by name) and rule files (by path), later ones overriding."""
    loader = _Loader()
    errors: list[str] = []
    for spec in specs:
        try:
            src = resolve(spec, None)
        except ValueError as e:
            raise RuleError(f"{spec}: {e}") from None
        if src is None:
            close = difflib.get_close_matches(spec, pack_names(), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise RuleError(f"{spec}: no such rule file, and not a shipped pack{hint} ({', '.join(pack_names())})")
        try:
            loader.load(src)
        except RuleError as e:  # the next file is checked too
            errors.extend(e.lines)
    errors += [
        f"{w.source}:{w.line}: waiver for rule {w.rule!r}: key 'rule': no rule with this id is loaded"
        + _close(w.rule, [*loader.rules, *loader.broken])
        for w in loader.waivers
        if w.rule not in loader.rules and w.rule not in loader.broken
    ]
    if errors:
        raise RuleErrors(tuple(errors))
    ruleset = RuleSet(
        sources=tuple(specs),
        rules=tuple(loader.rules.values()),
        waivers=tuple(loader.waivers),
        phases=types.MappingProxyType(dict(loader.phases)),
        files=tuple(loader.files),
        steps=loader.steps,
    )
    return noise_limits.attach(ruleset, loader.noise) if loader.noise is not None else ruleset


def trace_given_as_rules(spec: str) -> str | None:
    """Why ``spec``, given to ``--rules``, is no rule file: it is a trace or an nsys report
    (a pack name forgotten after ``--rules``, so the option took the first trace). None
    for anything else, which the loader judges as a rule file."""
    path = Path(spec)
    if is_pack(spec) or not path.is_file():  # never open a FIFO or a device here
        return None
    try:
        with path.open("rb") as fh:
            head = fh.read(len(NSYS_REPORT_MAGIC))
    except OSError:
        return None
    if not (head.startswith((SQLITE_MAGIC, NSYS_REPORT_MAGIC)) or path.suffix.lower() in REPORT_SUFFIXES):
        return None
    return (
        "a trace, not a rule file or pack: --rules takes a pack name "
        f"({', '.join(pack_names())}) or a YAML rule file, then BASE CANDIDATE"
    )
