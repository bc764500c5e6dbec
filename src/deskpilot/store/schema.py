"""Versioned migrations. Append a new entry to add a version; never edit a released one."""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            agent_session_id TEXT NOT NULL,
            mode TEXT NOT NULL CHECK (mode IN ('atomic', 'delegated')),
            state TEXT NOT NULL CHECK (state IN ('preflighting','observing','planning',
                'waiting_approval','acting','verifying','paused','handoff_required',
                'completed','failed','canceled')),
            contract_json TEXT NOT NULL,
            target_json TEXT,
            cancel_reason TEXT,
            taken_over_by TEXT,
            steps INTEGER NOT NULL DEFAULT 0,
            consecutive_noops INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            ended_at REAL
        );
        CREATE INDEX sessions_agent ON sessions(agent_session_id);
        CREATE INDEX sessions_state ON sessions(state);

        CREATE TABLE actions (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            params_hash TEXT NOT NULL,
            frame_id TEXT,
            tree_version TEXT,
            risk_level INTEGER NOT NULL CHECK (risk_level BETWEEN 0 AND 4),
            decision TEXT NOT NULL CHECK (decision IN ('allow','deny','require_approval',
                'require_handoff')),
            reason TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('requested','blocked','executing',
                'executed','failed','noop')),
            approval_id TEXT,
            outcome_json TEXT,
            error_code TEXT,
            created_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE INDEX actions_session ON actions(session_id, created_at);

        CREATE TABLE timeline_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            action_id TEXT,
            payload_json TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE INDEX timeline_session ON timeline_events(session_id, seq);

        CREATE TABLE verifications (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            spec_json TEXT NOT NULL,
            passed INTEGER,
            reason TEXT,
            evidence_json TEXT,
            created_at REAL NOT NULL,
            completed_at REAL
        );

        CREATE TABLE snapshots (
            id TEXT PRIMARY KEY,
            session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('app_snapshot','evidence')),
            retention_mode TEXT NOT NULL CHECK (retention_mode IN ('ttl','session','manual')),
            expires_at REAL,
            app_json TEXT,
            width INTEGER,
            height INTEGER,
            redaction_json TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE INDEX snapshots_session ON snapshots(session_id);
        CREATE INDEX snapshots_expiry ON snapshots(expires_at);

        CREATE TABLE snapshot_blobs (
            id TEXT PRIMARY KEY,
            snapshot_id TEXT NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('image','preview','evidence','text')),
            storage_key TEXT NOT NULL UNIQUE,
            byte_length INTEGER NOT NULL,
            content_type TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_access_at REAL NOT NULL
        );
        CREATE INDEX snapshot_blobs_snapshot ON snapshot_blobs(snapshot_id);
        CREATE INDEX snapshot_blobs_lru ON snapshot_blobs(last_access_at);

        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value_json TEXT NOT NULL,
            updated_at REAL NOT NULL
        );

        CREATE TABLE leases (
            resource TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            agent_session_id TEXT NOT NULL,
            acquired_at REAL NOT NULL
        );
        """,
    ),
    (
        2,
        # kernel: policy facts on each action, one-time confirmations, the kill-switch halt
        # and when each agent (MCP client) session began, so a halt binds exactly the agent
        # sessions that were running when the person pressed the kill switch.
        """
        ALTER TABLE actions ADD COLUMN effect_class TEXT;
        ALTER TABLE actions ADD COLUMN target_kind TEXT;
        ALTER TABLE actions ADD COLUMN data_classes TEXT;
        ALTER TABLE sessions ADD COLUMN paused_by TEXT;

        CREATE TABLE confirmations (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            action_id TEXT NOT NULL,
            action_kind TEXT NOT NULL,
            risk_level INTEGER NOT NULL CHECK (risk_level BETWEEN 0 AND 4),
            reason TEXT NOT NULL,
            summary TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending','approved','denied','expired',
                'consumed')),
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            resolved_at REAL,
            resolved_by TEXT
        );
        CREATE INDEX confirmations_status ON confirmations(status, created_at);

        CREATE TABLE halts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            reason TEXT NOT NULL,
            engaged_at REAL NOT NULL,
            lifted_at REAL,
            lifted_by TEXT
        );

        CREATE TABLE agent_sessions (
            id TEXT PRIMARY KEY,
            began_at REAL NOT NULL
        );
        """,
    ),
    (
        3,
        # vault: storage keys of deleted blob rows, so maintenance removes their files at the
        # next run instead of waiting out the 24 h orphan grace (a session deleted by cascade
        # takes its snapshot rows with it; the files must follow). Filled by a trigger that
        # deskpilot.store.snapshots creates (the migration runner splits on ';', which a
        # trigger body needs).
        """
        CREATE TABLE vault_tombstones (
            storage_key TEXT PRIMARY KEY
        );
        CREATE INDEX snapshots_created ON snapshots(retention_mode, created_at);
        """,
    ),
    (
        4,
        # verifications: a check may belong to one action (an atomic action's ``expect``) and
        # says where it came from (``task`` criteria or an action's ``expect``)
        """
        ALTER TABLE verifications ADD COLUMN action_id TEXT;
        ALTER TABLE verifications ADD COLUMN source TEXT NOT NULL DEFAULT 'task';
        CREATE INDEX verifications_session ON verifications(session_id, created_at);
        """,
    ),
    (
        5,
        # controls from another process: the process that owns each session (its pid), the
        # requests another process (the dashboard, `deskpilot session …`) leaves for that
        # owner to carry out, and the desktop-wide takeover hold (the person has the desktop:
        # every agent action of every session is refused until they hand it back). At most
        # one live hold per session (the partial unique index); the owner's inbox polls the
        # pending requests through their partial index.
        """
        ALTER TABLE sessions ADD COLUMN owner_pid INTEGER;

        CREATE TABLE control_requests (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            verb TEXT NOT NULL CHECK (verb IN ('pause','takeover','resume','stop',
                'bind_target')),
            args_json TEXT NOT NULL DEFAULT '{}',
            requested_by TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending','running','done','failed')),
            result_json TEXT,
            error_code TEXT,
            created_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE INDEX control_requests_pending ON control_requests(session_id)
            WHERE status = 'pending';
        CREATE INDEX control_requests_session ON control_requests(session_id, created_at);

        CREATE TABLE takeovers (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            held_by TEXT NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL,
            ended_by TEXT
        );
        CREATE UNIQUE INDEX takeovers_live ON takeovers(session_id) WHERE ended_at IS NULL;
        """,
    ),
]
