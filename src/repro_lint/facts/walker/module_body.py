"""What the extraction walk records of a module's body as a whole (part of
`extract.Extractor`): the names it binds before the walk starts (functions see globals
defined after them), where its docstring, `__future__` imports and leading imports end,
whether a statement is the `__main__` guard, and whether the module does work when run.
"""

from __future__ import annotations

import ast

from repro_lint.facts.syntax import NOT_LITERAL, literal

# ModuleInfo.extra key: the line where each module constant (`info.constants`) is first bound
CONSTANT_LINES = "constant_lines"


class ModuleFacts:
    def _prebind(self, body: list[ast.stmt]) -> None:
        """Bind module-level names first: functions see globals defined after them."""
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.r.bind_import(stmt)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.r.bind(stmt.name, f"{self.info.module}.{stmt.name}" if self.info.module else stmt.name)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                qual = self.r.qualify(stmt.value) if isinstance(stmt.value, (ast.Name, ast.Attribute)) else None
                if qual:
                    self.r.bind(stmt.targets[0].id, qual)
                value = literal(stmt.value)
                if value is not NOT_LITERAL:
                    name = stmt.targets[0].id
                    self.info.constants[name] = value
                    # where it is first bound: module-level code above that line cannot use it
                    self.info.extra.setdefault(CONSTANT_LINES, {}).setdefault(name, stmt.lineno)
            elif isinstance(stmt, (ast.If, ast.Try)) and not self._is_main_guard(stmt):
                self._prebind(stmt.body)
                for handler in getattr(stmt, "handlers", ()):
                    self._prebind(handler.body)
                self._prebind(stmt.orelse)

    def _module_layout(self, body: list[ast.stmt]) -> None:
        """Where the docstring, `__future__` imports and the leading import block end."""
        end = 0
        for i, stmt in enumerate(body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                self.info.docstring_end = stmt.end_lineno or stmt.lineno
                end = self.info.docstring_end
                continue
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                self.info.future_end = stmt.end_lineno or stmt.lineno
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                end = stmt.end_lineno or stmt.lineno
                continue
            if isinstance(stmt, ast.Try) and stmt.body and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body):
                end = stmt.end_lineno or stmt.lineno
                continue
            break
        self.info.import_block_end = end

    @staticmethod
    def _is_main_guard(stmt: ast.stmt) -> bool:
        if not isinstance(stmt, ast.If):
            return False
        test = stmt.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            sides = [test.left, test.comparators[0]]
            names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
            consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
            return bool(names and consts)
        return False

    def _changes_configuration(self, call: ast.Call) -> bool:
        """In a module that builds configuration objects (it imports a catalog
        `config-builders` name), a call of a method of an object the module binds or imports
        (`model.roi_heads.update(...)`): it changes the configuration, it does no work."""
        builders = self.m.config_builders
        if not any(imp[0].startswith(builders) for imp in self.info.imports):
            return False
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        qual = self.r.qualify(root)
        # a library module's function (`os.makedirs(...)`) is work; an object is configuration
        return qual is None or qual.split(".", 1)[0] not in self.m.external_roots

    def _mark_module_work(self, stmt: ast.stmt) -> None:
        if self.info.module_work:
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            self.info.module_work = True
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Call, ast.Await)):
            call = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
            if isinstance(call, ast.Call):
                qual = self.r.qualify(call.func) or (call.func.id if isinstance(call.func, ast.Name) else None)
                if qual in self.m.config_calls or self._changes_configuration(call):
                    return
            self.info.module_work = True
