"""One writer per configuration aggregate: endpoints and their keys are written only by
``switchboard.credentials``, teams and their members only by ``switchboard.teams``, sources
and rules only by ``todos.intake.sources``; push rings
(``push_attempts``) only by the lifecycle's statements.

The scan reads every Python file of the product (everything but ``tests/`` and migrations) and
every SQL file, and fails with file:line for each write of those models elsewhere: a manager or
queryset write (``Endpoint.objects.create``, ``source.rules.all().delete()``,
``queryset.update(...)`` on a queryset annotated as one of them), ``save()``/``delete()`` on a
variable known to hold one (by annotation, constructor, query or ``form.save(commit=False)``),
``save()`` of a ModelForm of theirs that does not save through the writer, the admin's default
``save_model``/``delete_model`` reached through ``super()``, and INSERT/UPDATE/DELETE/TRUNCATE of
their tables in SQL text. What a static scan cannot see (the admin's own default hooks) is
checked on the registered ModelAdmins themselves.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.forms import BaseInlineFormSet, BaseModelFormSet, ModelForm
from django.test import RequestFactory

from alerts import channels
from alerts.models import AlertChannel, AlertRule
from switchboard import credentials, teams
from switchboard.models import Endpoint, EndpointKey, Human, Team, TeamMember
from todos import lifecycle, schedules
from todos.intake import sources
from todos.models import PushAttempt, Rule, Schedule, ScheduleRun, Source

ROOT = Path(__file__).resolve().parents[1]
AGGREGATE_MODELS = (
    Endpoint,
    EndpointKey,
    Team,
    TeamMember,
    Source,
    Rule,
    PushAttempt,
    Schedule,
    ScheduleRun,
    AlertChannel,
    AlertRule,
)
MODELS = {model.__name__: model.__module__ for model in AGGREGATE_MODELS}
# Related managers that reach these models from another row: endpoint.keys, endpoint.rules,
# source.rules, human.endpoints, human.sources, human.alertchannels (a team's too).
RELATED = {
    "keys": "EndpointKey",
    "rules": "Rule",
    "endpoints": "Endpoint",
    "sources": "Source",
    "alertchannels": "AlertChannel",
    "memberships": "TeamMember",
}
TABLES = {model._meta.db_table: model.__name__ for model in AGGREGATE_MODELS}
WRITE_METHODS = {
    "save",
    "delete",
    "update",
    "create",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
WRITE_METHODS |= {f"a{name}" for name in WRITE_METHODS}  # the async twins
# ModelAdmin hooks whose default (reached through super()) writes the row with the ORM.
ADMIN_WRITE_HOOKS = {"save_model", "delete_model", "delete_queryset"}


def _relative(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def _source_file(module: object) -> str:
    file = getattr(module, "__file__", None)
    assert file is not None
    return _relative(Path(file))


# The writers, and what each may write.
WRITERS: dict[str, set[str]] = {
    _source_file(credentials): {"Endpoint", "EndpointKey"},
    _source_file(teams): {"Team", "TeamMember"},
    _source_file(sources): {"Source", "Rule"},
    _source_file(schedules): {"Schedule", "ScheduleRun"},
    _source_file(channels): {"AlertChannel", "AlertRule"},
    # The fire step's conditional advance (todos/schedules.py runs it).
    _relative(Path(_source_file(schedules)).parent / "sql" / "schedule_advance.sql"): {"Schedule"},
    # Revoking an endpoint is a lifecycle transition: one statement sets revoked_at and
    # dead-letters the endpoint's unfinished todos, so it lives with the other transitions.
    _relative(lifecycle.statements.SQL_DIR / "revoke_endpoint.sql"): {"Endpoint"},
    # A ring queues its push in its own statement; the sweeper's sender (todos/push.py) takes,
    # records and hands back pushes through its own statements, the Board's test ring too.
    **{
        _relative(lifecycle.statements.SQL_DIR / f"{name}.sql"): {"PushAttempt"}
        for name in (
            "_ring_arms",
            "claim_pushes",
            "record_push",
            "unclaim_pushes",
            "queue_test_push",
        )
    },
}


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    line: int
    model: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} writes {self.model}"


# --- SQL text --------------------------------------------------------------------------------

_TABLE = rf'(?:ONLY\s+)?(?:"?public"?\.)?"?({"|".join(TABLES)})"?\b'
_SQL_WRITE = rf"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO)\s+{_TABLE}"
_TRUNCATE = r"\bTRUNCATE\s+(?:TABLE\s+)?([\w\s,.\"]+)"


def sql_findings(text: str, path: str, first_line: int, *, any_case: bool) -> list[Finding]:
    """Writes of the aggregates' tables in ``text``. In Python strings only upper-case keywords
    count (this code base writes SQL in upper case), so prose such as "update rules" is not SQL;
    in a .sql file every case does."""
    flags = re.IGNORECASE if any_case else 0
    found = []
    for match in re.finditer(_SQL_WRITE, text, flags):
        line = first_line + text.count("\n", 0, match.start())
        statement = " ".join(match[0].split())
        found.append(Finding(path, line, TABLES[match[1].lower()], f"SQL {statement!r}"))
    for match in re.finditer(_TRUNCATE, text, flags):
        line = first_line + text.count("\n", 0, match.start())
        for name in re.split(r"[\s,]+", match[1]):
            table = name.strip('"').split(".")[-1].lower()
            if table in TABLES:
                found.append(Finding(path, line, TABLES[table], f"SQL TRUNCATE {table}"))
    return found


def _strip_sql_comments(text: str) -> str:
    # Keep the line count: each comment becomes the empty rest of its line.
    return re.sub(r"--[^\n]*", "", text)


# --- Python ----------------------------------------------------------------------------------


@dataclass
class _FileFacts:
    """What one module binds: model names (with aliases), model-returning functions, ModelForms
    of the aggregates and whether they save through a writer, classes tied to a model."""

    models: dict[str, str] = field(default_factory=dict)  # local name -> model
    model_modules: set[str] = field(default_factory=set)  # local names of the models' modules
    forms: dict[str, str] = field(default_factory=dict)  # ModelForm class -> model
    forms_saving_through_writers: set[str] = field(default_factory=set)
    class_models: dict[str, str] = field(default_factory=dict)  # admin/form class -> model


def _mentioned(facts: _FileFacts, annotation: ast.expr | None) -> set[str]:
    if annotation is None:
        return set()
    text = ast.unparse(annotation)
    return {facts.models[name] for name in re.findall(r"\w+", text) if name in facts.models}


def _model_ref(facts: _FileFacts, node: ast.expr) -> str | None:
    """The model ``node`` names: ``Rule``, an alias of it, or ``models.Rule``."""
    if isinstance(node, ast.Name):
        return facts.models.get(node.id)
    if (
        isinstance(node, ast.Attribute)
        and node.attr in MODELS
        and isinstance(node.value, ast.Name)
        and node.value.id in facts.model_modules
    ):
        return node.attr
    return None


def _collect_facts(tree: ast.Module) -> _FileFacts:
    facts = _FileFacts()
    model_modules = set(MODELS.values())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in model_modules:
            for alias in node.names:
                if alias.name in MODELS and MODELS[alias.name] == node.module:
                    facts.models[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in model_modules:
                    facts.model_modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in model_modules and alias.asname:
                    facts.model_modules.add(alias.asname)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        model = None
        for deco in node.decorator_list:  # @admin.register(Source)
            if isinstance(deco, ast.Call) and deco.args:
                model = model or _model_ref(facts, deco.args[0])
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "model" for t in stmt.targets
            ):
                model = model or _model_ref(facts, stmt.value)  # an inline's model = Rule
            if isinstance(stmt, ast.ClassDef) and stmt.name == "Meta":
                for meta in stmt.body:
                    if isinstance(meta, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "model" for t in meta.targets
                    ):
                        form_model = _model_ref(facts, meta.value)
                        if form_model is not None:
                            facts.forms[node.name] = form_model
                            model = model or form_model
        if model is not None:
            facts.class_models[node.name] = model
        if node.name in facts.forms and any(
            isinstance(stmt, ast.FunctionDef) and stmt.name == "save" for stmt in node.body
        ):
            facts.forms_saving_through_writers.add(node.name)
    return facts


def _returns_index(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Function name -> the models its return annotation names, over every scanned module."""
    index: dict[str, set[str]] = {}
    for tree in trees.values():
        facts = _collect_facts(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                mentioned = _mentioned(facts, node.returns)
                if mentioned:
                    index.setdefault(node.name, set()).update(mentioned)
    return index


class _Scope:
    def __init__(self, parent: _Scope | None, class_model: str | None) -> None:
        self.parent = parent
        self.class_model = class_model
        self.models: dict[str, set[str]] = {}
        self.forms: dict[str, str] = {}

    def lookup(self, name: str) -> set[str]:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.models:
                return scope.models[name]
            scope = scope.parent
        return set()

    def form(self, name: str) -> str | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.forms:
                return scope.forms[name]
            scope = scope.parent
        return None


class _Checker:
    def __init__(
        self, path: str, facts: _FileFacts, returns: dict[str, set[str]], exempt: set[str]
    ) -> None:
        self.path = path
        self.facts = facts
        self.returns = returns
        self.exempt = exempt  # the models this module may write: its own, if it is a writer
        self.findings: list[Finding] = []

    # What an expression holds --------------------------------------------------------------

    def models_of(self, node: ast.expr, scope: _Scope) -> set[str]:
        """The aggregate models whose rows or querysets ``node`` may hold (empty: none)."""
        if isinstance(node, ast.Name):
            return scope.lookup(node.id)
        if isinstance(node, ast.Subscript):
            return self.models_of(node.value, scope)
        if isinstance(node, ast.Await):
            return self.models_of(node.value, scope)
        if isinstance(node, ast.Attribute):
            if node.attr in {"objects", "_default_manager", "_base_manager"}:
                model = _model_ref(self.facts, node.value)
                if model is not None:
                    return {model}
                if (
                    isinstance(node.value, ast.Attribute)
                    and node.value.attr == "model"
                    and isinstance(node.value.value, ast.Name)
                    and node.value.value.id == "self"
                    and scope.class_model
                ):
                    return {scope.class_model}  # self.model.objects in a ModelAdmin
            if node.attr in RELATED:
                return {RELATED[node.attr]}
            if (
                node.attr == "instance"
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and scope.class_model
            ):
                return {scope.class_model}  # a ModelForm's instance
            return set()  # another attribute of a row (its owner, its todos): not ours
        if isinstance(node, ast.Call):
            func = node.func
            model = _model_ref(self.facts, func)
            if model is not None:
                return {model}  # Rule(...)
            if isinstance(func, ast.Name):
                if func.id == "get_object_or_404" and node.args:
                    ref = _model_ref(self.facts, node.args[0])
                    return {ref} if ref else self.models_of(node.args[0], scope)
                return set(self.returns.get(func.id, set()))
            if isinstance(func, ast.Attribute):
                if func.attr == "save" and isinstance(func.value, ast.Name):
                    form = scope.form(func.value.id)
                    if form is not None:
                        return {self.facts.forms[form]}  # endpoint = form.save(commit=False)
                if func.attr == "get_object" and scope.class_model:
                    return {scope.class_model}
                if func.attr in self.returns and not self._is_chain(func.value, scope):
                    return set(self.returns[func.attr])  # sources.create_rule(...)
                return self.models_of(func.value, scope)  # a queryset method: filter, all…
        return set()

    def _is_chain(self, node: ast.expr, scope: _Scope) -> bool:
        return bool(self.models_of(node, scope))

    # Binding -------------------------------------------------------------------------------

    def bind(self, target: ast.expr, models: set[str], scope: _Scope) -> None:
        if isinstance(target, ast.Name) and models:
            scope.models.setdefault(target.id, set()).update(models)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:  # over-approximate: source, secret = create_source()
                self.bind(element, models, scope)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, models, scope)

    def bind_form(self, target: ast.expr, value: ast.expr, scope: _Scope) -> None:
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in self.facts.forms
        ):
            scope.forms[target.id] = value.func.id

    def collect(self, body: list[ast.stmt], scope: _Scope) -> None:
        """Bind the names of one function (or the module), flow-insensitively: twice, so a name
        bound from another bound later in the text is known too."""
        for _ in range(2):
            for node in self._walk_scope(body):
                if isinstance(node, ast.Assign):
                    models = self.models_of(node.value, scope)
                    for target in node.targets:
                        self.bind(target, models, scope)
                        self.bind_form(target, node.value, scope)
                elif isinstance(node, ast.AnnAssign):
                    models = _mentioned(self.facts, node.annotation)
                    if node.value is not None:
                        models |= self.models_of(node.value, scope)
                        self.bind_form(node.target, node.value, scope)
                    self.bind(node.target, models, scope)
                elif isinstance(node, ast.NamedExpr):
                    self.bind(node.target, self.models_of(node.value, scope), scope)
                elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                    self.bind(node.target, self.models_of(node.iter, scope), scope)

    @staticmethod
    def _walk_scope(body: list[ast.stmt]) -> Iterator[ast.AST]:
        """The nodes of ``body``, nested functions and classes included but not their insides
        (``visit_body`` walks those in their own scope)."""
        stack: list[ast.AST] = list(reversed(body))
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            ):
                stack.extend(reversed(list(ast.iter_child_nodes(node))))

    # Checking ------------------------------------------------------------------------------

    def run(self, tree: ast.Module) -> list[Finding]:
        self.visit_body(tree.body, _Scope(None, None), class_name=None)
        return self.findings

    def visit_body(self, body: list[ast.stmt], scope: _Scope, class_name: str | None) -> None:
        self.collect(body, scope)
        for node in self._walk_scope(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = _Scope(scope, scope.class_model)
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    models = _mentioned(self.facts, arg.annotation)
                    if models:
                        inner.models[arg.arg] = models
                    annotation = ast.unparse(arg.annotation) if arg.annotation else ""
                    for form in self.facts.forms:
                        if re.search(rf"\b{form}\b", annotation):
                            inner.forms[arg.arg] = form
                self.visit_body(node.body, inner, class_name)
            elif isinstance(node, ast.ClassDef):
                inner = _Scope(scope, self.facts.class_models.get(node.name))
                self.visit_body(node.body, inner, node.name)
            elif isinstance(node, ast.Lambda):
                continue
            elif isinstance(node, ast.Call):
                self.check_call(node, scope, class_name)

    def check_call(self, node: ast.Call, scope: _Scope, class_name: str | None) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        receiver = func.value
        if func.attr in ADMIN_WRITE_HOOKS and scope.class_model and _is_super(receiver):
            self.report(node, scope.class_model, f"super().{func.attr}() (Django's own write)")
            return
        if func.attr not in WRITE_METHODS:
            return
        if func.attr == "save" and isinstance(receiver, ast.Name):
            form = scope.form(receiver.id)
            if form is not None:
                if form not in self.facts.forms_saving_through_writers and not _no_commit(node):
                    self.report(node, self.facts.forms[form], f"{form}.save()")
                return
        if func.attr == "save" and _is_super(receiver):
            if class_name in self.facts.forms and not _no_commit(node):
                self.report(node, self.facts.forms[class_name], "super().save()")
            return
        for model in sorted(self.models_of(receiver, scope)):
            self.report(node, model, f"{ast.unparse(func)}()")

    def report(self, node: ast.AST, model: str, what: str) -> None:
        if model in self.exempt:
            return
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), model, what))


def _is_super(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _no_commit(call: ast.Call) -> bool:
    return any(
        kw.arg == "commit" and isinstance(kw.value, ast.Constant) and kw.value.value is False
        for kw in call.keywords
    )


def findings_in(
    tree: ast.Module, path: str, returns: dict[str, set[str]], exempt: set[str]
) -> list[Finding]:
    """The writes of the aggregates in one module, less those of the ``exempt`` models."""
    findings = _Checker(path, _collect_facts(tree), returns, exempt).run(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            findings += sql_findings(node.value, path, node.lineno, any_case=False)
    return [f for f in findings if f.model not in exempt]


def check_text(text: str, path: str = "product/module.py") -> list[str]:
    """The findings for one snippet of code, as ``path:line: …`` lines."""
    exempt = WRITERS.get(path, set())
    if path.endswith(".sql"):
        found = sql_findings(_strip_sql_comments(text), path, 1, any_case=True)
    else:
        tree = ast.parse(text)
        found = findings_in(tree, path, _returns_index({path: tree}), exempt)
    return [str(f) for f in found if f.model not in exempt]


# --- the product -----------------------------------------------------------------------------

_SKIPPED_DIRS = {"tests", "migrations", "node_modules", "__pycache__"}


def product_files(suffix: str) -> list[Path]:
    """Every ``*suffix`` file of the product: all but tests, migrations and hidden directories
    (the virtualenv, the embedded database)."""
    return sorted(
        path
        for path in ROOT.rglob(f"*{suffix}")
        if not any(
            part in _SKIPPED_DIRS or part.startswith(".")
            for part in path.relative_to(ROOT).parts[:-1]
        )
    )


def scan(*, honour_writers: bool = True) -> list[Finding]:
    """Every write of the aggregates in the product; with ``honour_writers`` False, the writer
    modules' own writes too."""
    trees = {_relative(p): ast.parse(p.read_text(), str(p)) for p in product_files(".py")}
    returns = _returns_index(trees)
    findings: list[Finding] = []
    for path, tree in trees.items():
        exempt = WRITERS.get(path, set()) if honour_writers else set()
        findings += findings_in(tree, path, returns, exempt)
    for sql in product_files(".sql"):
        path = _relative(sql)
        exempt = WRITERS.get(path, set()) if honour_writers else set()
        text = _strip_sql_comments(sql.read_text())
        findings += [f for f in sql_findings(text, path, 1, any_case=True) if f.model not in exempt]
    return findings


def test_endpoints_keys_sources_and_rules_are_written_only_by_their_writers() -> None:
    findings = scan()
    assert not findings, "written outside their writer module:\n" + "\n".join(map(str, findings))


def test_the_scan_sees_every_write_the_writers_make() -> None:
    # Without the writers' exemption, each writer module is caught writing its own models: the
    # scan reads the real code, and its patterns match the way the product writes.
    caught = {(f.path, f.model) for f in scan(honour_writers=False)}

    for path, models in WRITERS.items():
        for model in models:
            assert (path, model) in caught, (path, model)


# --- the scanner, on snippets ----------------------------------------------------------------

IMPORTS = (
    "from switchboard.models import Endpoint, EndpointKey, Setting\n"
    "from todos.models import Rule, Source\n"
)


@pytest.mark.parametrize(
    ("code", "model"),
    [
        ("Endpoint.objects.create(slug='x')", "Endpoint"),
        ("Source.objects.filter(pk=1).update(verify=False)", "Source"),
        ("EndpointKey.objects.filter(endpoint=e).delete()", "EndpointKey"),
        ("Rule.objects.bulk_create([])", "Rule"),
        ("Endpoint.objects.get_or_create(slug='x')", "Endpoint"),
        ("source.rules.create(queue='q')", "Rule"),
        ("endpoint.keys.all().delete()", "EndpointKey"),
        ("human.sources.update(name='x')", "Source"),
        ("def f(rule: Rule) -> None:\n    rule.save()", "Rule"),
        ("def f(rule: Rule | None) -> None:\n    rule.delete()", "Rule"),
        (
            "def f(qs: QuerySet[EndpointKey]) -> None:\n    qs.filter(x=1).update(revoked_at=None)",
            "EndpointKey",
        ),
        ("e = Endpoint(slug='x')\ne.save()", "Endpoint"),
        ("for s in Source.objects.all():\n    s.delete()", "Source"),
        (
            "r = Rule.objects.get(pk=1)\nr.enabled = False\nr.save(update_fields=['enabled'])",
            "Rule",
        ),
        ("async def f():\n    await Rule.objects.acreate(queue='q')", "Rule"),
        ("cursor.execute('UPDATE rules SET enabled = false WHERE id = %s', [1])", "Rule"),
        ("cursor.execute(f'DELETE FROM endpoint_keys WHERE id = {n}')", "EndpointKey"),
        ('SQL = """\n  INSERT INTO\n  sources (slug) VALUES (%s)"""', "Source"),
        ("cursor.execute('TRUNCATE todos, endpoints CASCADE')", "Endpoint"),
        (
            "class F(forms.ModelForm):\n    class Meta:\n        model = Endpoint\n"
            "def view(request):\n    form = F(request.POST)\n"
            "    endpoint = form.save(commit=False)\n    endpoint.save()",
            "Endpoint",
        ),
        (
            "class F(forms.ModelForm):\n    class Meta:\n        model = Source\n"
            "def view(request):\n    F(request.POST).is_valid()\n    form = F(request.POST)\n"
            "    form.save()",
            "Source",
        ),
        (
            "@admin.register(Source)\nclass A(admin.ModelAdmin):\n"
            "    def save_model(self, request, obj, form, change):\n"
            "        super().save_model(request, obj, form, change)",
            "Source",
        ),
        (
            "@admin.register(Rule)\nclass A(admin.ModelAdmin):\n"
            "    def view(self, request, object_id):\n"
            "        rule = self.get_object(request, object_id)\n        rule.delete()",
            "Rule",
        ),
        ("import todos.models as m\nm.Rule.objects.create(queue='q')", "Rule"),
        ("from todos.models import Rule as R\nR.objects.create(queue='q')", "Rule"),
    ],
)
def test_the_scanner_reports_a_write_with_its_file_and_line(code: str, model: str) -> None:
    findings = check_text(IMPORTS + code)

    assert findings, code
    assert all(f.startswith("product/module.py:") for f in findings), findings
    assert any(f.endswith(f"writes {model}") for f in findings), findings


@pytest.mark.parametrize(
    "code",
    [
        "Setting.objects.update_or_create(key='k', defaults={})",
        "def f(setting: Setting) -> None:\n    setting.save()",
        "def f(endpoint: Endpoint) -> None:\n    endpoint.todos.update(title='x')",
        "def f(source: Source) -> None:\n    source.owner.save()",
        "Rule.objects.filter(enabled=True).count()",
        "entry = {}\nentry.update(matched=False)",
        "kwargs.update(keepalives=1)",
        "cursor.execute('SELECT * FROM rules WHERE source_id = %s', [1])",
        "'''Only update rules through todos.sources.'''",
        "class F(forms.ModelForm):\n    class Meta:\n        model = Rule\n"
        "    def save(self, commit=True):\n        return sources.create_rule()\n"
        "def view(request):\n    form = F(request.POST)\n    form.save()",
        "def view(form: F) -> None:\n    endpoint = form.save(commit=False)",
    ],
)
def test_the_scanner_leaves_other_code_alone(code: str) -> None:
    assert check_text(IMPORTS + code) == []


def test_the_scanner_lets_each_writer_write_only_its_own_models() -> None:
    credentials_path = _source_file(credentials)

    assert check_text(IMPORTS + "Endpoint.objects.create(slug='x')", credentials_path) == []
    assert check_text(IMPORTS + "Source.objects.create(slug='x')", credentials_path) == [
        f"{credentials_path}:3: Source.objects.create() writes Source"
    ]
    sql = _relative(lifecycle.statements.SQL_DIR / "revoke_endpoint.sql")
    assert check_text("UPDATE endpoints SET revoked_at = now()", sql) == []
    assert check_text("-- no UPDATE rules here\nupdate rules set enabled = false", sql) == [
        f"{sql}:2: SQL 'update rules' writes Rule"
    ]


# --- the admin: its own save and delete hooks --------------------------------------------------


def _superuser_request() -> object:
    request = RequestFactory().get("/admin/")
    request.user = Human(username="root", is_active=True, is_superuser=True, is_staff=True)
    return request


def _overrides(cls: type, base: type, name: str) -> bool:
    return getattr(cls, name) is not getattr(base, name)


@pytest.mark.parametrize("model", AGGREGATE_MODELS, ids=lambda m: m.__name__)
def test_the_admin_saves_and_deletes_these_models_only_through_their_writers(
    model: type,
) -> None:
    request = _superuser_request()
    model_admin = admin.site._registry[model]
    cls = type(model_admin)

    if model_admin.has_add_permission(request) or model_admin.has_change_permission(request):
        assert _overrides(cls, ModelAdmin, "save_model"), f"{cls.__name__}.save_model"
    if model_admin.has_delete_permission(request):
        for hook in ("delete_model", "delete_queryset"):
            assert _overrides(cls, ModelAdmin, hook), f"{cls.__name__}.{hook}"
    for inline in model_admin.get_inline_instances(request):
        if inline.model not in AGGREGATE_MODELS:
            continue
        writes = inline.has_add_permission(request, None) or inline.has_change_permission(
            request, None
        )
        if writes:
            assert _overrides(inline.form, ModelForm, "save"), f"{inline.form.__name__}.save"
        if inline.can_delete and inline.has_delete_permission(request, None):
            assert _overrides(inline.formset, BaseInlineFormSet, "delete_existing"), (
                f"{inline.formset.__name__}.delete_existing"
            )
            assert _overrides(inline.formset, BaseModelFormSet, "delete_existing")
