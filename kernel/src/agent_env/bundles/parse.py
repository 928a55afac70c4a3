"""Read a bundle folder into a `Bundle`, collecting every problem into one `BundleError`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from agent_env.bundles.aliases import apply_aliases, entity_aliases, read_aliases
from agent_env.bundles.check import check_bundle
from agent_env.bundles.files import (
    LEAVINGS,
    Problems,
    content_files,
    inside,
    list_dir,
    load_toml,
)
from agent_env.bundles.model import (
    ArtifactKind,
    ArtifactSpec,
    Bundle,
    EvalSpec,
    FolderKind,
    FolderSpec,
    ResolvedSource,
    Task,
)
from agent_env.bundles.requirements import (
    check_requirements,
    declared_requirements,
    declared_reuse,
)
from agent_env.bundles.schema import AliasesFile, ArtifactFile, EvalFile, read_model
from agent_env.bundles.source import folder_id_prefix
from agent_env.bundles.tasks import read_task
from agent_env.convert import Ignored
from agent_env.errors import AgentEnvError, BundleError, PluginError
from agent_env.runs.overrides import fields_for
from agent_env.sandbox import provider_chain
from agent_env.suggest import did_you_mean

KINDS = ("tasks", "evals", "envs", "agents", "artifacts", "skills")
DOCKERFILE = "Dockerfile"
SKILL_MD = "SKILL.md"
#: Skills are kernel-owned (a folder with SKILL.md); their one type is this.
SKILL_TYPE = "skill"
#: Folder kind -> the registry whose types may declare `default_for` that kind.
DEFAULT_TYPE_REGISTRY = {"env": "env_types", "agent": "agents"}
CONFIG_FILE = {"env": "env.toml", "agent": "agent.toml", "artifact": "artifact.toml"}


def _ignored(name: str) -> bool:
    return name.startswith(".") or name in LEAVINGS


def parse_bundle(source: ResolvedSource, plugins: Any) -> Bundle:
    """Parse and validate the folder of `source`; `BundleError` listing every problem."""
    return _Parser(source, plugins).parse()


class _Parser:
    def __init__(self, source: ResolvedSource, plugins: Any):
        path = Path(source.path).expanduser()
        if not path.is_dir():
            raise BundleError(f"{path}: no such folder")
        self.root = path.resolve()
        self.source = source
        self.plugins = plugins
        self.name = source.name or self.root.name
        self.id_prefix = (source.id_prefix or folder_id_prefix(self.root)).rstrip("/")
        self.problems = Problems(self.root)
        self.structured: list[tuple[Path, list[Any]]] = []
        self.default_types: dict[str, tuple[list[str], list[str]]] = {}
        self.task_names: set[str] = set()  # every tasks/<name>.json, parsed or not
        self.eval_names: set[str] = set()
        self.ignored: list[tuple[str, list[Ignored]]] = []
        self.entity_aliases: dict[str, dict[str, str]] = {}

    def ignored_in(self, path: Path) -> list[Ignored]:
        """A list that collects the compat-ignored fields set in the file `path`."""
        sink: list[Ignored] = []
        self.ignored.append((self.problems.rel(path), sink))
        return sink

    def _warnings(self) -> list[str]:
        """One warning per compat-ignored field (and reason), naming where it is set."""
        places: dict[tuple[str, str], list[str]] = {}
        for rel, sink in self.ignored:
            for item in sink:
                name = item.path.rsplit(".", 1)[-1]
                where = f"{rel} {item.where}".strip()
                places.setdefault((name, item.reason), []).append(f"{where}: {item.path}")
        out = []
        for (name, reason), wheres in sorted(places.items()):
            more = len(wheres) - 3
            shown = ", ".join(wheres[:3]) + (f" and {more} more" if more > 0 else "")
            out.append(f"{name!r} is accepted for compatibility and ignored: {reason} ({shown})")
        return out

    def _tool_warnings(self, bundle: Bundle) -> list[str]:
        """Criteria naming a tool no env of their task serves (`bundles.tool_refs`)."""
        from agent_env.bundles.tool_refs import served_tools_of, tool_warnings

        try:
            env_types = self.plugins.env_types
        except (AttributeError, PluginError):
            return []
        return tool_warnings(bundle, self.problems.rel, served_tools_of(env_types))

    def eid(self, name: str) -> str:
        return f"{self.id_prefix}/{name}"

    def parse(self) -> Bundle:
        kinds, description, bundle_toml, aliases_toml = self._scan_root()
        provenance = self.source.provenance
        setup = provenance.get("setup") if isinstance(provenance.get("setup"), str) else None
        reuse = None
        if bundle_toml is not None:
            requires, reuse = self._requires(bundle_toml)
        else:
            card = provenance.get("plugins") or []
            requires = [r for r in card if isinstance(r, str)] if isinstance(card, list) else []
        check_requirements(requires, bundle=self.name, setup=setup)
        artifacts = self._artifacts(kinds.get("artifacts"))
        skills = self._folders("skill", kinds.get("skills"))
        for name in sorted(set(artifacts) & set(skills)):
            self.problems.add(
                f"artifacts/{name} and skills/{name}",
                "share a name; steps name artifacts and skills alike, so rename one",
            )
        envs = self._folders("env", kinds.get("envs"))
        agents = self._folders("agent", kinds.get("agents"))
        alias_file = self._alias_file(aliases_toml)
        self.entity_aliases, problems = entity_aliases(alias_file, {"env": envs, "agent": agents})
        for problem in problems:
            self.problems.add(aliases_toml, problem)
        tasks = self._tasks(kinds.get("tasks"))
        evals = self._evals(kinds.get("evals"))
        aliases = self._aliases(aliases_toml, alias_file)
        bundle = Bundle(
            root=self.root,
            name=self.name,
            id_prefix=self.id_prefix,
            description=description,
            tasks=tasks,
            evals=evals,
            envs=envs,
            agents=agents,
            artifacts=artifacts,
            skills=skills,
            aliases=aliases,
            env_aliases=self.entity_aliases.get("env", {}),
            agent_aliases=self.entity_aliases.get("agent", {}),
            requires=requires,
            reuse=reuse,
            provenance=dict(self.source.provenance),
            warnings=self._warnings(),
        )
        check_bundle(
            bundle, self.problems, self.structured, agent_kinds=self.plugins.agents.names()
        )
        if not self.problems.items:
            bundle.warnings.extend(self._tool_warnings(bundle))
        if self.problems.items:
            self.problems.items.sort(key=lambda p: p.split(": ", 1)[0])
            count = len(self.problems.items)
            if setup and any(_needs_setup(p) for p in self.problems.items):
                self.problems.items.append(f"setup: {setup}")
            raise BundleError(
                f"bundle {self.root} has {count} problem{'s' if count != 1 else ''}",
                self.problems.items,
            )
        return bundle

    # -- the root ---------------------------------------------------------------------------

    def _scan_root(self) -> tuple[dict[str, Path], str | None, Path | None, Path | None]:
        kinds: dict[str, Path] = {}
        readme = bundle_toml = aliases_toml = None
        misspelled = False
        for entry in list_dir(self.root, self.problems):
            if _ignored(entry.name):
                continue
            path = Path(entry.path)
            if entry.name in KINDS:
                if entry.is_symlink() and not inside(path, self.root, self.problems):
                    continue
                if entry.is_dir():
                    kinds[entry.name] = path
                else:
                    self.problems.add(path, "a kind folder must be a folder")
            elif entry.name == "README.md" or (
                entry.name.lower() == "readme.md" and readme is None
            ):
                readme = path
            elif entry.name == "bundle.toml":
                bundle_toml = path
            elif entry.name == "aliases.toml":
                aliases_toml = path
            elif entry.is_dir():
                near = [k for k in KINDS if entry.name.lower() in (k, k[:-1])]
                if near:
                    misspelled = True
                    self.problems.add(
                        f"{entry.name}/",
                        f"not a kind folder; names are case-sensitive (did you mean {near[0] + '/'!r}?)",
                    )
            elif entry.name.lower() in ("bundle.toml", "aliases.toml"):
                right = entry.name.lower()
                self.problems.add(entry.name, f"names are case-sensitive (did you mean {right!r}?)")
        if not kinds and not misspelled:
            raise BundleError(
                f"{self.root}: not a bundle: it has none of " + ", ".join(f"{k}/" for k in KINDS)
            )
        description = self._description(readme) if readme else None
        return kinds, description, bundle_toml, aliases_toml

    def _description(self, readme: Path) -> str | None:
        try:
            lines = readme.read_text(encoding="utf-8-sig", errors="replace").splitlines()
        except OSError:
            return None
        if lines and lines[0].strip() == "---":
            end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
            lines = lines[end + 1 :]
        for line in lines:
            text = line.strip().lstrip("#").strip()
            if text and not text.startswith(("<", "[![", "![")):
                return text
        return None

    def _requires(self, path: Path) -> tuple[list[str], str | None]:
        """`bundle.toml`'s requirements and `reuse`."""
        data = load_toml(path, self.problems)
        if data is None:
            return [], None
        requires, problems = declared_requirements(data)
        reuse, more = declared_reuse(data)
        for problem in [*problems, *more]:
            self.problems.add(path, problem)
        return requires, reuse

    # -- entities ---------------------------------------------------------------------------

    def _entries(self, folder: Path | None) -> list[tuple[str, Path, Any]]:
        if folder is None:
            return []
        out = []
        for entry in list_dir(folder, self.problems):
            if _ignored(entry.name):
                continue
            path = Path(entry.path)
            if entry.is_symlink() and not inside(path, self.root, self.problems):
                continue
            out.append((entry.name, path, entry))
        return out

    def _artifacts(self, folder: Path | None) -> dict[str, ArtifactSpec]:
        out: dict[str, ArtifactSpec] = {}
        for name, path, entry in self._entries(folder):
            if not entry.is_dir():
                self.problems.add(
                    path, "an artifact is a folder: artifacts/<name>/ holding its files"
                )
                continue
            files = content_files(path, self.root, self.problems)
            config: dict[str, Any] = {}
            if CONFIG_FILE["artifact"] in files:
                toml_path = files.pop(CONFIG_FILE["artifact"])
                config = load_toml(toml_path, self.problems) or {}
                _, problems = read_model(config, ArtifactFile, ignored=self.ignored_in(toml_path))
                worded_below = ("type:", "id:") if isinstance(config.get("type"), str) else ("id:",)
                for problem in problems:
                    if not problem.startswith(worded_below):
                        self.problems.add(toml_path, problem)
            if any(f.lower() == SKILL_MD.lower() for f in files):
                self.problems.add(path, "this looks like a skill: skills live in skills/<name>/")
                continue
            near_docker = [f for f in files if f.lower() == "dockerfile" and f != DOCKERFILE]
            for f in near_docker:
                self.problems.add(
                    path / f, f"names are case-sensitive (did you mean {DOCKERFILE!r}?)"
                )
            declared = config.get("type")
            if not files:
                self.problems.add(path, "an artifact folder has no files")
                continue
            if not isinstance(declared, (str, type(None))):
                declared = None  # reported by the model above; inferred, so steps still resolve
            if declared is not None:
                kinds: dict[str, ArtifactKind] = {
                    "file": "file",
                    "fileset": "fileset",
                    "image": "image",
                    "docker_image": "image",
                    "file_artifact_universe": "fileset",
                }
                if declared not in kinds:
                    self.problems.add(
                        path / CONFIG_FILE["artifact"],
                        f"type: unknown artifact type {declared!r}{did_you_mean(str(declared), kinds)}",
                    )
                    continue
                kind = kinds[declared]
                if kind == "file" and len(files) != 1:
                    self.problems.add(
                        path, f"type 'file' needs exactly one file, found {len(files)}"
                    )
                    continue
            elif DOCKERFILE in files:
                kind = "image"
            elif len(files) == 1 and "/" not in next(iter(files)):
                kind = "file"
            else:
                kind = "fileset"
            out[name] = ArtifactSpec(
                name=name,
                id=self._declared_id(config, name, path),
                kind=kind,
                path=path,
                files=files,
                config=config,
            )
        return out

    def _declared_id(self, config: dict[str, Any], name: str, where: Path) -> str:
        declared = config.get("id")
        if declared is None:
            return self.eid(name)
        if not isinstance(declared, str) or not declared.startswith("@"):
            self.problems.add(
                where,
                f"id: an id declared in a bundle must start with '@local/' or '@', not {declared!r}",
            )
            return self.eid(name)
        return declared

    def _default_type(self, kind: str, path: Path) -> str:
        """The type a `kind` folder gets when its config names none: the one registered type
        that declares `default_for = kind`. None or several is a problem ("" is returned)."""
        if kind == "skill":
            return SKILL_TYPE
        if kind not in self.default_types:
            self.default_types[kind] = self._claimed_default(kind)
        claimed, installed = self.default_types[kind]
        if len(claimed) == 1:
            return claimed[0]
        if claimed:
            problem = (
                f"several installed {kind} types declare themselves the default "
                f"({', '.join(claimed)}); set type"
            )
        else:
            from agent_env.plugins.known import install_hint

            hint = install_hint("folder default", kind)
            problem = (
                f"no installed {kind} type declares itself the default (`default_for`); set "
                f"type (installed: {', '.join(installed) or 'none'})"
                + (f", or install the plugin that provides the default: {hint}" if hint else "")
            )
        self.problems.add(path / CONFIG_FILE[kind], f"type: not set, and {problem}")
        return ""

    def _claimed_default(self, kind: str) -> tuple[list[str], list[str]]:
        """(the registered `kind` types that declare `default_for = kind`, all of them)."""
        try:
            registry = getattr(self.plugins, DEFAULT_TYPE_REGISTRY.get(kind, ""))
        except (AttributeError, PluginError):
            return [], []
        names = sorted(registry)
        claimed = [n for n in names if getattr(registry.get(n), "default_for", None) == kind]
        return claimed, names

    def _folders(self, kind: FolderKind, folder: Path | None) -> dict[str, FolderSpec]:
        out: dict[str, FolderSpec] = {}
        for name, path, entry in self._entries(folder):
            if not entry.is_dir():
                self._stray_file(kind, name, path)
                continue
            files = content_files(path, self.root, self.problems)
            config: dict[str, Any] = {}
            unreadable = False  # its config file did not load (reported): nothing to check
            if kind == "skill":
                if SKILL_MD not in files:
                    near = [f for f in files if f.lower() == SKILL_MD.lower()]
                    hint = f" (found {near[0]!r}; names are case-sensitive)" if near else ""
                    self.problems.add(path, f"a skill needs {SKILL_MD}{hint}")
                    continue
            else:
                toml_name = CONFIG_FILE[kind]
                if toml_name in files:
                    loaded = load_toml(files[toml_name], self.problems)
                    unreadable = loaded is None
                    config = loaded or {}
                elif DOCKERFILE not in files:
                    near = [f for f in files if f.lower() in ("dockerfile", toml_name)]
                    hint = f" (found {near[0]!r}; names are case-sensitive)" if near else ""
                    self.problems.add(path, f"needs a {DOCKERFILE} or an {toml_name}{hint}")
                    continue
            entity_type = config.get("type")
            if entity_type is None:
                entity_type = self._default_type(kind, path)
            elif not isinstance(entity_type, str) or not entity_type:
                self.problems.add(
                    path / CONFIG_FILE.get(kind, ""), "type: expected a non-empty string"
                )
                entity_type = self._default_type(kind, path)
            if kind != "skill" and not unreadable and entity_type:
                self._check_config(kind, entity_type, path, config, list(files))
            out[name] = FolderSpec(
                kind=kind,
                name=name,
                id=self._declared_id(config, name, path),
                type=entity_type,
                path=path,
                files=files,
                config=config,
            )
        return out

    def _stray_file(self, kind: str, name: str, path: Path) -> None:
        """A file where a `kind` folder is expected (`envs/mail.toml`): named, never passed
        over (a step naming it would otherwise hear only "no env 'mail'"). Notes (`*.md`) are
        left alone."""
        if name.lower().endswith((".md", ".txt")):
            return
        stem = name.rsplit(".", 1)[0] if "." in name else name
        config = CONFIG_FILE.get(kind, SKILL_MD)
        self.problems.add(
            path,
            f"an {kind} is a folder, not a file: move it to {path.parent.name}/{stem}/{config}"
            if kind != "skill"
            else f"a skill is a folder, not a file: move it to skills/{stem}/{SKILL_MD}",
        )

    def _check_config(
        self, kind: str, entity_type: str, folder: Path, config: dict[str, Any], files: list[str]
    ) -> None:
        """The static checks an env / agent folder's type declares, run for every folder: its
        `config_model` (the env.toml / agent.toml structured strictly: unknown keys get a
        did-you-mean, compat-ignored keys a warning) and its `problems(config, files)`. An
        env folder naming a type no installed plugin registers is a problem (did-you-mean);
        an in-tree type whose plugin is missing parses, and using it names the install."""
        path = folder / CONFIG_FILE[kind]
        try:
            registry = getattr(self.plugins, DEFAULT_TYPE_REGISTRY[kind])
            cls = registry.get(entity_type) if entity_type in registry else None
        except (AttributeError, PluginError):
            return
        if cls is None:
            from agent_env.plugins.known import distribution

            if kind == "env" and distribution("env type", entity_type) is None:
                known = registry.names()
                self.problems.add(
                    path,
                    f"type: unknown env type {entity_type!r}{did_you_mean(entity_type, known)}; "
                    f"installed: {', '.join(known) or 'none'}",
                )
            return
        model = getattr(cls, "config_model", None)
        if model is not None and attrs.has(model):
            _, problems = read_model(config, model, ignored=self.ignored_in(path))
            for problem in problems:
                self.problems.add(path, problem)
        check = getattr(cls, "problems", None)
        if check is None:
            return
        try:
            found = list(check(config, files) or ())
        except Exception as e:  # noqa: BLE001 - a broken check is reported, not fatal
            found = [f"problems() of {kind} type {entity_type!r} failed: {type(e).__name__}: {e}"]
        for problem in map(str, found):
            # `env.toml: port: ...` is shown as the model's problems are: under the file's path
            about_file, _, rest = problem.partition(": ")
            if about_file == CONFIG_FILE[kind] and rest:
                self.problems.add(path, rest)
            else:
                self.problems.add(folder, problem)

    # -- tasks ------------------------------------------------------------------------------

    def _tasks(self, folder: Path | None) -> dict[str, Task]:
        out: dict[str, Task] = {}
        for filename, path, entry in self._entries(folder):
            if entry.is_dir():
                self.problems.add(path, "a task is a file tasks/<name>.json, not a folder")
                continue
            if not filename.endswith(".json"):
                if filename.lower().endswith(".json"):
                    right = filename[: -len(".json")] + ".json"
                    self.problems.add(path, f"names are case-sensitive (did you mean {right!r}?)")
                continue
            name = filename[: -len(".json")]
            self.task_names.add(name)
            task = self._task(name, path)
            if task is not None:
                out[name] = task
        return out

    def _task(self, name: str, path: Path) -> Task | None:
        raw, steps, ok = read_task(
            path, self.plugins.step_types, self.problems, ignored=self.ignored_in(path)
        )
        if steps is not None:
            steps = [apply_aliases(step, self.entity_aliases) for step in steps]
            self.structured.append((path, steps))
            ok = self._check_providers(path, steps) and ok
        if not ok or steps is None:  # no steps only when a problem was recorded
            return None
        return Task(name=name, id=self.eid(name), steps=steps, path=path, raw=raw)

    def _check_providers(self, path: Path, steps: list[Any]) -> bool:
        """Each step field that names a sandbox provider (the fields its type lets `--sandbox`
        replace) names an installed one (or a fallback chain of them): refused here, with a
        did-you-mean, not at run time."""
        try:
            providers = self.plugins.sandbox_providers
        except (AttributeError, PluginError):
            return True
        ok = True
        for step in steps:
            try:
                fields = fields_for(type(step), "provider")
            except PluginError as e:
                ok = False
                self.problems.add(path, f"step {step.id!r}: {e}")
                continue
            for field in fields:
                value = getattr(step, field, None)
                if not isinstance(value, str):
                    continue
                try:
                    provider_chain(value, providers)
                except AgentEnvError as e:
                    ok = False
                    self.problems.add(path, f"step {step.id!r}: {field}: {e}")
        return ok

    # -- evals and aliases ------------------------------------------------------------------

    def _evals(self, folder: Path | None) -> dict[str, EvalSpec]:
        out: dict[str, EvalSpec] = {}
        task_files = self.task_names
        for filename, path, entry in self._entries(folder):
            if entry.is_dir() or not filename.endswith(".toml"):
                if filename.lower().endswith(".toml") and not filename.endswith(".toml"):
                    self.problems.add(path, "names are case-sensitive (did you mean '.toml'?)")
                continue
            name = filename[: -len(".toml")]
            self.eval_names.add(name)
            config = load_toml(path, self.problems)
            if config is None:
                continue
            model, problems = read_model(config, EvalFile, ignored=self.ignored_in(path))
            for problem in problems:
                self.problems.add(path, problem)
            names = model.tasks if model is not None else config.get("tasks")
            if not isinstance(names, list) or not all(isinstance(t, str) for t in names):
                continue  # the shape problem is reported; the names cannot be checked
            if not names:
                self.problems.add(path, "tasks: an eval needs at least one task")
                continue
            bad = model is None
            seen: set[str] = set()
            resolved: list[str] = []
            for task_name in names:
                local = self._local_name(task_name)
                if task_name in seen:
                    bad = True
                    self.problems.add(path, f"tasks: {task_name!r} is listed twice")
                seen.add(task_name)
                if local is None:
                    resolved.append(task_name)
                elif local not in task_files:
                    bad = True
                    self.problems.add(
                        path,
                        f"tasks: no task {task_name!r} in the bundle{did_you_mean(local, task_files)}",
                    )
                else:
                    resolved.append(local)
            if not bad:
                out[name] = EvalSpec(
                    name=name,
                    id=self._declared_id(config, name, path),
                    tasks=resolved,
                    path=path,
                    config=config,
                )
        return out

    def _local_name(self, ref: str) -> str | None:
        """A bundle name for `ref` (a name, or this bundle's full id); None for another id."""
        if ref.startswith("@"):
            prefix = self.id_prefix + "/"
            return ref[len(prefix) :] if ref.startswith(prefix) else None
        return ref

    def _alias_file(self, path: Path | None) -> AliasesFile:
        data = load_toml(path, self.problems) if path is not None else None
        if data is None:
            return AliasesFile()
        model, problems = read_aliases(data)
        for problem in problems:
            self.problems.add(path, problem)
        return model or AliasesFile()

    def _aliases(self, path: Path | None, model: AliasesFile) -> dict[str, str]:
        """The task and eval aliases, each naming a task or eval and hiding none."""
        targets = self.task_names | self.eval_names
        out: dict[str, str] = {}
        for alias, target in model.aliases.items():
            if alias in targets:
                self.problems.add(
                    path, f"{alias}: the alias hides the task or eval of the same name"
                )
            elif target not in targets:
                self.problems.add(
                    path,
                    f"{alias}: no task or eval {target!r} in the bundle{did_you_mean(target, targets)}",
                )
            else:
                out[alias] = target
        return out


def _needs_setup(problem: str) -> bool:
    """A problem a bundle's setup command may fix: something the bundle needs is not there."""
    return any(m in problem for m in ("unknown step type", "no artifact", "no env", "no agent"))
