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
]
