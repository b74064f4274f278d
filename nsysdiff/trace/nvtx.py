"""NVTX ranges: their summaries and keys (names folded in SQL), and the attribution of
scopes: ranges loaded by key, warm-up cuts, and the launches, calls and ranges inside them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import CALL_IDS, LAUNCHING, RowRules
from nsysdiff.trace.connection import TraceConnection
from nsysdiff.trace.names import NAME_LIMIT, key_name, key_prefilter, key_sql, name_text
from nsysdiff.trace.records import ApiStats, Attribution, RangeKey, RangeRow, Selection, Window
from nsysdiff.trace.runtime import add_calls, call_stats
from nsysdiff.trace.schema import Schema

# NVTX event types when ENUM_NSYS_EVENT_TYPE is absent (values from the export docs).
_NVTX_RANGE_TYPES_BUILTIN = {
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxtPushPopRange": 70,
    "NvtxtStartEndRange": 71,
}
_NVTX_DOMAIN_CREATE_BUILTIN = 75


def _list(values: Iterable[int]) -> str:
    """Integer ids as an SQL list."""
    return ",".join(str(int(v)) for v in values)


class NvtxReader(TraceConnection):
    """NVTX ranges (``NVTX_EVENTS``) and what lies inside them."""

    if TYPE_CHECKING:
        # The synchronising calls are named by the runtime side (RuntimeReader).
        def _sync_ids(self) -> dict[int, str]: ...

    def __init__(self, path: Path, con: sqlite3.Connection, schema: Schema) -> None:
        super().__init__(path, con, schema)
        self._short: bool | None = None  # whether no StringIds value is past NAME_LIMIT
        # (range kind, codes) -> its temporary table of range reaches (_reach_tables).
        self._reach: dict[tuple[int, str], str] = {}
        self._folds: dict[tuple[str, str], list[tuple[object, ...]]] = {}  # _fold_groups(whole=True)
        self._domains: dict[int, str] | None = None  # _nvtx_domains, once read

    def _nvtx_types(self) -> tuple[dict[str, int], int]:
        enum = self._enum("ENUM_NSYS_EVENT_TYPE")
        types = {n: enum.get(n, v) for n, v in _NVTX_RANGE_TYPES_BUILTIN.items()}
        return types, enum.get("NvtxDomainCreate", _NVTX_DOMAIN_CREATE_BUILTIN)

    def _nvtx_name_sql(self) -> tuple[str, str]:
        cols = self.schema.tables[s.NVTX]
        if "textId" in cols and self.schema.has("StringIds", "id", "value"):
            return "coalesce(n.text, st.value, '')", f" LEFT JOIN {self._nvtx_strings()} st ON st.id = n.textId"
        return "coalesce(n.text, '')", ""

    def _nvtx_strings(self) -> str:
        """The table registered NVTX strings are joined from, per range.

        ``StringIds`` itself in every real export. When a string is longer than
        ``NAME_LIMIT`` (a crafted file), a temporary copy with such strings cut as
        :func:`name_text` cuts them: joined per row, one string of megabytes would be
        copied and folded once for every range that uses it.
        """
        if self._short is None:
            (longest,) = self.query("SELECT coalesce(max(length(value)), 0) FROM StringIds")[0]
            self._short = int(longest) <= NAME_LIMIT  # type: ignore[call-overload]
            if not self._short:
                self.execute("CREATE TEMP TABLE IF NOT EXISTS nsysdiff_str (id, value TEXT)")
                self.execute(
                    f"INSERT INTO temp.nsysdiff_str SELECT id, value FROM StringIds WHERE length(value) <= {NAME_LIMIT}"
                )
                cur = self.con.execute(f"SELECT id, value FROM StringIds WHERE length(value) > {NAME_LIMIT}")
                try:
                    for key, value in cur:  # one long string in memory at a time
                        self.con.execute("INSERT INTO temp.nsysdiff_str VALUES (?, ?)", (key, name_text(value)))
                except s.DB_ERRORS as e:
                    raise s.db_error(self.path, e) from None
                finally:
                    cur.close()
                self.execute("CREATE INDEX temp.nsysdiff_str_id ON nsysdiff_str (id)")
        return "StringIds" if self._short else "temp.nsysdiff_str"

    def _nvtx_domains(self, create: int, used: Iterable[object]) -> dict[int, str]:
        """Names of the domains among ``used`` (domain ids of range rows).

        Domain 0 is NVTX's default domain, which is never created and has no name, so a
        trace whose ranges are all in it (every PyTorch trace) needs no scan for the
        ``NvtxDomainCreate`` rows; the names found are kept for the reader's next call.
        """
        if not self.schema.has(s.NVTX, "domainId") or not any(int(d) for d in used):  # type: ignore[call-overload]
            return {}
        if self._domains is None:
            name, join = self._nvtx_name_sql()
            self._domains = {
                int(d): name_text(t)  # type: ignore[call-overload]
                for d, t in self.query(
                    f"SELECT n.domainId, {name} FROM {s.NVTX} n{join} "
                    "WHERE n.eventType = ? AND typeof(n.domainId) = 'integer' AND n.domainId != 0",
                    (create,),
                )
            }
        return self._domains

    def _nvtx_rules(self) -> RowRules:
        """Closed NVTX ranges (marks and open ranges have no end, and are not used)."""
        nullable = tuple(c for c in ("domainId", "globalTid") if self.schema.has(s.NVTX, c))
        return RowRules(s.NVTX, nullable=nullable, alias="n")

    def nvtx_summary(self, window: Window | None = None) -> tuple[RangeRow, ...]:
        """Range instances grouped by raw name and domain (SQL does the grouping)."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType"):
            return ()
        types, create = self._nvtx_types()
        name, join = self._nvtx_name_sql()
        cond = ""
        if window is not None:
            cond = f" AND n.start >= {int(window.start_ns)} AND n.start < {int(window.end_ns)}"
        where = f'n.eventType IN ({",".join(str(t) for t in types.values())}) AND n."end" IS NOT NULL{cond}'
        rows = self._fold_groups(f"FROM {s.NVTX} n{join} WHERE {where}", name, where, whole=True)
        return self._range_rows(rows, create)

    def _fold_groups(
        self, from_where: str, name: str, checked: str, *, whole: bool = False
    ) -> list[tuple[object, ...]]:
        """(SQL-folded name, domain id, count, total ns) of the NVTX rows (alias ``n``) that
        ``from_where`` selects; ``checked`` (conditions on ``n`` alone) finds the rows for
        the diagnosis when one of them is impossible.

        An upsert into a small keyed table costs one probe of a few-page b-tree per row;
        GROUP BY would sort every row (many rows, few folded names). The rows' checks
        accumulate beside the counts.

        ``whole``: ``from_where`` reads the trace alone (no temporary table), so the result
        is kept for the next call that asks the same (a scope's census of range names and
        its unscoped NVTX summary are one pass).
        """
        if whole and (from_where, name) in self._folds:
            return self._folds[(from_where, name)]
        rules = self._nvtx_rules()
        bad = rules.row_sql()
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_names")
        # WITHOUT ROWID: the key is the table, so an update is one b-tree probe, not an
        # index probe and then a row's (0.5 s less per 4.8M ranges).
        self.execute(
            "CREATE TEMP TABLE nsysdiff_names (name TEXT, dom INTEGER, n INTEGER, total INTEGER, "
            "bad INTEGER, PRIMARY KEY (name, dom)) WITHOUT ROWID"
        )
        # No float sum per row for the int64 check: SQLite's integer "+" turns REAL when it
        # overflows, so a total past int64 shows as a REAL total (and total() below, a
        # float sum of the few totals, checks the sum across names).
        self.execute(
            f"INSERT INTO temp.nsysdiff_names SELECT {key_sql(name)}, {self._nvtx_dom()}, 1, "
            f'coalesce(n."end" - n.start, 0), {bad} {from_where} '
            "ON CONFLICT (name, dom) DO UPDATE SET n = n + 1, total = total + excluded.total, "
            "bad = bad + excluded.bad"
        )
        checks = self.query(
            "SELECT coalesce(sum(bad), 0) + coalesce(sum(typeof(total) != 'integer'), 0), total(total) "
            "FROM temp.nsysdiff_names"
        )
        self.verify(rules, checked, checks)
        rows = self.query("SELECT name, dom, n, total FROM temp.nsysdiff_names ORDER BY name, dom")
        if whole:
            self._folds[(from_where, name)] = rows
        return rows

    def _range_rows(self, rows: list[tuple[object, ...]], create: int) -> tuple[RangeRow, ...]:
        """(name, domain id, count, total) rows with their domains named."""
        domains = self._nvtx_domains(create, (r[1] for r in rows))
        return tuple(
            RangeRow(key_name(n), domains.get(int(d), ""), int(c), int(t))  # type: ignore[call-overload]
            for n, d, c, t in rows
        )

    # --- attribution (scopes) -------------------------------------------------------
    #
    # Everything below runs in SQLite: the ranges a scope names go into a temporary table
    # (a temporary file, never the input), and "inside a range" is one ordered sweep per
    # range kind with a running maximum of range ends, so no query holds more than
    # SQLite's page cache, however many ranges and calls the trace has.

    def nvtx_keys(self) -> tuple[RangeKey, ...]:
        """The distinct closed range names (SQL-folded) and domains, with their counts."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType", "globalTid"):
            return ()
        types, create = self._nvtx_types()
        name, join = self._nvtx_name_sql()
        where = self._nvtx_ranges_where(types)
        rows = self._fold_groups(f"FROM {s.NVTX} n{join} WHERE {where}", name, where, whole=True)
        domains = self._nvtx_domains(create, (r[1] for r in rows))
        return tuple(
            RangeKey(str(n), int(d), domains.get(int(d), ""), int(c))  # type: ignore[call-overload]
            for n, d, c, _ in rows
        )

    def _nvtx_dom(self) -> str:
        return "coalesce(n.domainId, 0)" if self.schema.has(s.NVTX, "domainId") else "0"

    def _nvtx_ranges_where(self, types: dict[str, int]) -> str:
        kinds = ",".join(str(t) for t in types.values())
        return f'n.eventType IN ({kinds}) AND n."end" IS NOT NULL'

    def load_ranges(self, codes: Sequence[tuple[RangeKey, int]]) -> None:
        """Copy the instances of the given keys into ``temp.nsysdiff_r``, each with its code."""
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_codes")
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_r")
        for table in self._reach.values():
            self.execute(f"DROP TABLE IF EXISTS temp.{table}")
        self._reach.clear()
        self.execute("CREATE TEMP TABLE nsysdiff_codes (name TEXT, dom INTEGER, code INTEGER, PRIMARY KEY (name, dom))")
        self.con.executemany(
            "INSERT OR IGNORE INTO temp.nsysdiff_codes VALUES (?, ?, ?)",
            [(k.sql_name, k.domain_id, c) for k, c in codes],
        )
        types, _ = self._nvtx_types()
        push = {types["NvtxPushPopRange"], types["NvtxtPushPopRange"]}
        name, join = self._nvtx_name_sql()
        likely, params = key_prefilter(name, sorted({k.sql_name for k, _ in codes}))
        self.query(
            "CREATE TEMP TABLE nsysdiff_r AS SELECT c.code AS code, "
            f"n.eventType IN ({','.join(str(t) for t in push)}) AS pp, n.start AS start, "
            'n."end" AS "end", coalesce(n.globalTid, 0) AS tid, '
            "(coalesce(n.globalTid, 0) >> 24) & 16777215 AS pid "
            f"FROM {s.NVTX} n{join} JOIN temp.nsysdiff_codes c "
            f"ON c.name = {key_sql(name)} AND c.dom = {self._nvtx_dom()} "
            f"WHERE {self._nvtx_ranges_where(types)} AND {likely}",
            params,
        )

    def make_cuts(self, mask: Sequence[int], skip: int) -> int:
        """Per process, the start of the (skip+1)-th instance of the mask's ranges, in
        ``temp.nsysdiff_cut``; processes with fewer instances are cut entirely. Returns
        how many processes keep something."""
        never = np.iinfo(np.int64).max
        self.execute("DROP TABLE IF EXISTS temp.nsysdiff_cut")
        self.execute(
            "CREATE TEMP TABLE nsysdiff_cut AS SELECT pid, "
            f"coalesce(max(CASE WHEN rn = {int(skip) + 1} THEN start END), {never}) AS cut FROM ("
            "SELECT pid, start, row_number() OVER (PARTITION BY pid ORDER BY start) AS rn "
            f"FROM temp.nsysdiff_r WHERE code IN ({_list(mask)})) GROUP BY pid"
        )
        self.execute("CREATE UNIQUE INDEX temp.nsysdiff_cut_pid ON nsysdiff_cut (pid)")
        ((kept,),) = self.query(f"SELECT count(*) FROM temp.nsysdiff_cut WHERE cut != {never}")
        return int(kept)  # type: ignore[call-overload,no-any-return]

    def _kept(self, events: str, payload: Sequence[str], att: Attribution, windowed: bool) -> str:
        """SQL of the ``events`` (start, end, tid, pid, *payload) that ``att`` keeps."""
        conds = []
        if windowed and att.window is not None:
            conds.append(f"e.start >= {int(att.window.start_ns)} AND e.start < {int(att.window.end_ns)}")
        join = ""
        if att.cut:
            # A process without an instance of the range is not cut at all.
            join = " LEFT JOIN temp.nsysdiff_cut c ON c.pid = e.pid"
            conds.append(f"e.start >= coalesce(c.cut, {np.iinfo(np.int64).min})")
        cols = ", ".join(["start", '"end"', "tid", "pid", *payload])
        sql = f"SELECT {', '.join('e.' + c for c in cols.split(', '))} FROM ({events}) e{join}"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        for mask in att.within:
            inside = [
                # The last range to start at or before the event, of the event's thread
                # (push/pop ranges) or process (start/end ranges): the furthest end of
                # all the ranges up to it must reach the event's end.
                f"(SELECT x.reach FROM temp.{table} x WHERE x.key = e.{'tid' if pp else 'pid'} "
                f'AND x.start <= e.start ORDER BY x.start DESC LIMIT 1) >= e."end"'
                for pp, table in self._reach_tables(mask)
            ]
            picked = ", ".join("e." + c for c in cols.split(", "))
            sql = f"SELECT {picked} FROM ({sql}) e WHERE {' OR '.join(inside) or '0'}"
        return sql

    def _reach_tables(self, mask: Sequence[int]) -> list[tuple[int, str]]:
        """Per range kind of the mask (1 push/pop, 0 start/end), a temporary table of its
        ranges' starts per thread or process, each with the furthest end of the ranges
        that start at or before it: ``(key, start, reach)``, keyed by (key, start).

        An event lies inside some range of the kind exactly when the last of these rows
        at or before its start reaches its end (nesting and overlap need no special case),
        so each event costs one index lookup among the ranges instead of a sort of every
        event with them.
        """
        if not mask or not self._has_ranges_table():
            return []
        codes = _list(sorted(set(mask)))
        out = []
        for (pp,) in self.query(f"SELECT DISTINCT pp FROM temp.nsysdiff_r WHERE code IN ({codes}) ORDER BY pp DESC"):
            kind = int(pp)  # type: ignore[call-overload]
            table = self._reach.get((kind, codes))
            if table is None:
                table = self._reach[(kind, codes)] = f"nsysdiff_reach{len(self._reach)}"
                self.execute(
                    f"CREATE TEMP TABLE {table} (key INTEGER, start INTEGER, reach INTEGER, "
                    "PRIMARY KEY (key, start)) WITHOUT ROWID"
                )
                self.execute(
                    f"INSERT INTO temp.{table} SELECT key, start, max(e) OVER (PARTITION BY key ORDER BY start "
                    f"ROWS UNBOUNDED PRECEDING) FROM (SELECT {'tid' if kind else 'pid'} AS key, start, "
                    f'max("end") AS e FROM temp.nsysdiff_r WHERE pp = {kind} AND code IN ({codes}) '
                    "GROUP BY key, start)"
                )
            out.append((kind, table))
        return out

    def select_launches(self, att: Attribution, name: str = "nsysdiff_sel") -> Selection:
        """The (process, correlationId) of the runtime/driver calls ``att`` keeps, in a
        temporary table through which the GPU work they launched is found."""
        self.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self.execute(f"CREATE TEMP TABLE {name} (pid INTEGER, corr INTEGER, PRIMARY KEY (pid, corr)) WITHOUT ROWID")
        where = LAUNCHING
        tables = [t for t in (s.RUNTIME, s.DRIVER) if self.schema.has(t, "start", "end", *CALL_IDS)]
        self._check_calls(tables, CALL_IDS, where)
        parts = [
            f'SELECT start, "end", globalTid AS tid, (globalTid >> 24) & 16777215 AS pid, correlationId AS corr '
            f"FROM {table} WHERE {where}"
            for table in tables
        ]
        if parts:
            kept = self._kept(" UNION ALL ".join(parts), ("corr",), att, windowed=False)
            self.execute(f"INSERT OR IGNORE INTO temp.{name} SELECT pid, corr FROM ({kept})")
        return Selection(window=att.window, launches_table=name)

    def _check_calls(self, tables: Sequence[str], ids: tuple[str, ...], where: str) -> None:
        """Refuse impossible rows among the calls a sweep is about to order (one aggregate scan,
        once per reader: each phase of a scoped read sweeps the same calls again)."""
        for table in tables:
            rules = RowRules(table, ids=ids)
            if (rules, where) in self.checked:
                continue
            ((*checks,),) = self.query(f"SELECT {rules.sql()} FROM {table} WHERE {where}")
            self.verify(rules, where, [checks])
            self.checked.add((rules, where))

    def count_ranges(self, mask: Sequence[int], att: Attribution) -> int:
        """Instances of the mask's ranges that ``att`` keeps."""
        if not self._has_ranges_table():
            return 0
        events = f'SELECT start, "end", tid, pid FROM temp.nsysdiff_r WHERE code IN ({_list(mask)})'
        ((n,),) = self.query(f"SELECT count(*) FROM ({self._kept(events, (), att, windowed=True)})")
        return int(n)  # type: ignore[call-overload,no-any-return]

    def _has_ranges_table(self) -> bool:
        return bool(self.query("SELECT 1 FROM sqlite_temp_master WHERE name = 'nsysdiff_r'"))

    def sync_calls_in(self, att: Attribution) -> tuple[ApiStats, ...]:
        """Synchronising calls that ``att`` keeps, by name."""
        ids = self._sync_ids()
        where = f"nameId IN ({_list(ids)})"
        tables = [t for t in (s.RUNTIME, s.DRIVER) if ids and self.schema.has(t, "nameId", "start", "end", "globalTid")]
        self._check_calls(tables, ("nameId", "globalTid"), where)
        parts = [
            f'SELECT start, "end", globalTid AS tid, (globalTid >> 24) & 16777215 AS pid, nameId AS nid '
            f"FROM {table} WHERE {where}"
            for table in tables
        ]
        if not parts:
            return ()
        kept = self._kept(" UNION ALL ".join(parts), ("nid",), att, windowed=True)
        totals: dict[str, tuple[int, int]] = {}
        for nid, calls, total in self.query(f'SELECT nid, count(*), sum("end" - start) FROM ({kept}) GROUP BY nid'):
            add_calls(totals, ids[int(nid)], int(calls), int(total))  # type: ignore[call-overload]
        return call_stats(totals)

    def nvtx_summary_in(self, att: Attribution) -> tuple[RangeRow, ...]:
        """Range instances that ``att`` keeps, grouped like :meth:`nvtx_summary`."""
        if not self.schema.has(s.NVTX, "start", "end", "eventType", "globalTid"):
            return ()
        if not att.within and not att.cut:
            # Nothing to attribute (a --per or --phases read without --nvtx keeps every
            # range, or those of a window): the unscoped summary, the same rows under the
            # same conditions, which the census of range names has already made.
            return self.nvtx_summary(att.window)
        types, create = self._nvtx_types()
        name, join = self._nvtx_name_sql()
        events = (
            'SELECT n.start AS start, n."end" AS "end", coalesce(n.globalTid, 0) AS tid, '
            "(coalesce(n.globalTid, 0) >> 24) & 16777215 AS pid, n.rowid AS rid "
            f"FROM {s.NVTX} n WHERE {self._nvtx_ranges_where(types)}"
        )
        kept = self._kept(events, ("rid",), att, windowed=True)
        rows = self._fold_groups(
            f"FROM ({kept}) k JOIN {s.NVTX} n ON n.rowid = k.rid{join} WHERE 1", name, self._nvtx_ranges_where(types)
        )
        return self._range_rows(rows, create)
