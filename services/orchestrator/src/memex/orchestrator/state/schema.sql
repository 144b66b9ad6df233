-- The orchestrator's state, one SQLite database (WAL) or one PostgreSQL database. Migrations are
-- applied in order by the engine (state/sqlite.py, state/postgres.py) when a Database opens; each
-- block below `-- migration N` runs once, in a transaction, and bumps the version (SQLite's
-- user_version; the memex_schema table on PostgreSQL). A block is SQL both engines run, unless a
-- `-- migration N postgres` block follows it: PostgreSQL runs that one in its place. Keep the two
-- equal in meaning; the contract suite runs on both.

-- migration 1
CREATE TABLE conversations (
  id          TEXT PRIMARY KEY,
  tenant      TEXT NOT NULL,
  title       TEXT NOT NULL,
  persona     TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);
CREATE INDEX conversations_by_tenant ON conversations (tenant, updated_at DESC);

CREATE TABLE messages (
  id               TEXT PRIMARY KEY,
  conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text             TEXT NOT NULL,
  citations        TEXT NOT NULL DEFAULT '[]',  -- JSON array of validated citations
  model            TEXT NOT NULL DEFAULT '',
  latency_ms       REAL NOT NULL DEFAULT 0,
  created_at       TEXT NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, created_at);

CREATE TABLE threads (
  id          TEXT PRIMARY KEY,
  tenant      TEXT NOT NULL,
  title       TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX threads_by_tenant ON threads (tenant, created_at DESC);

-- Queued chat (SPEC B13). User turns move pending -> thinking -> answered | error; a claim holds
-- a lease, so a turn whose worker died goes back to pending once the lease has expired.
CREATE TABLE turns (
  id           TEXT PRIMARY KEY,
  thread_id    TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
  role         TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text         TEXT NOT NULL,
  citations    TEXT NOT NULL DEFAULT '[]',
  state        TEXT NOT NULL CHECK (state IN ('pending', 'thinking', 'answered', 'error')),
  error        TEXT NOT NULL DEFAULT '',
  claimed_by   TEXT NOT NULL DEFAULT '',
  lease_until  REAL NOT NULL DEFAULT 0,
  reply_to     TEXT REFERENCES turns (id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,
  created_at   TEXT NOT NULL
);
CREATE INDEX turns_by_thread ON turns (thread_id, seq);
CREATE INDEX turns_pending ON turns (state, seq) WHERE role = 'user';

-- Telemetry (SPEC B12): one row per search, ask and chat, one per retrieved item.
CREATE TABLE telemetry_turns (
  id               TEXT PRIMARY KEY,
  tenant           TEXT NOT NULL,
  kind             TEXT NOT NULL CHECK (kind IN ('search', 'ask', 'chat')),
  query            TEXT NOT NULL,
  model            TEXT NOT NULL DEFAULT '',
  persona          TEXT NOT NULL DEFAULT '',
  prompt_version   TEXT NOT NULL DEFAULT '',
  grounding_score  REAL,
  abstained        INTEGER NOT NULL DEFAULT 0,
  latency_ms       REAL NOT NULL,
  conversation_id  TEXT REFERENCES conversations (id) ON DELETE CASCADE,
  created_at       TEXT NOT NULL
);
CREATE TABLE telemetry_retrievals (
  turn_id         TEXT NOT NULL REFERENCES telemetry_turns (id) ON DELETE CASCADE,
  item_id         TEXT NOT NULL,
  final_rank      INTEGER NOT NULL,
  fused_score     REAL NOT NULL,
  channel_scores  TEXT NOT NULL,  -- JSON object: channel -> score
  cited           INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (turn_id, item_id)
);

-- The audited LLM log (SPEC B4): every reasoner call, prompts and responses redacted.
CREATE TABLE llm_log (
  id                 TEXT PRIMARY KEY,
  request_id         TEXT NOT NULL,
  purpose            TEXT NOT NULL,
  model              TEXT NOT NULL,
  persona            TEXT NOT NULL,
  prompt             TEXT NOT NULL,
  response           TEXT NOT NULL DEFAULT '',
  prompt_tokens      INTEGER NOT NULL DEFAULT 0,
  completion_tokens  INTEGER NOT NULL DEFAULT 0,
  latency_ms         REAL NOT NULL DEFAULT 0,
  outcome            TEXT NOT NULL DEFAULT 'started',
  created_at         TEXT NOT NULL
);

-- migration 1 postgres
-- Migration 1 as PostgreSQL spells it: REAL is 4 bytes there (a lease time in epoch seconds
-- would lose minutes), so DOUBLE PRECISION; and the tables read in insertion order get the
-- rowid that SQLite gives every table, as an identity column, so the stores' SQL is the same.
CREATE TABLE conversations (
  id          TEXT PRIMARY KEY,
  tenant      TEXT NOT NULL,
  title       TEXT NOT NULL,
  persona     TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);
CREATE INDEX conversations_by_tenant ON conversations (tenant, updated_at DESC);

CREATE TABLE messages (
  id               TEXT PRIMARY KEY,
  conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text             TEXT NOT NULL,
  citations        TEXT NOT NULL DEFAULT '[]',  -- JSON array of validated citations
  model            TEXT NOT NULL DEFAULT '',
  latency_ms       DOUBLE PRECISION NOT NULL DEFAULT 0,
  created_at       TEXT NOT NULL,
  rowid            BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, created_at);

CREATE TABLE threads (
  id          TEXT PRIMARY KEY,
  tenant      TEXT NOT NULL,
  title       TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX threads_by_tenant ON threads (tenant, created_at DESC);

CREATE TABLE turns (
  id           TEXT PRIMARY KEY,
  thread_id    TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
  role         TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text         TEXT NOT NULL,
  citations    TEXT NOT NULL DEFAULT '[]',
  state        TEXT NOT NULL CHECK (state IN ('pending', 'thinking', 'answered', 'error')),
  error        TEXT NOT NULL DEFAULT '',
  claimed_by   TEXT NOT NULL DEFAULT '',
  lease_until  DOUBLE PRECISION NOT NULL DEFAULT 0,
  reply_to     TEXT REFERENCES turns (id) ON DELETE CASCADE,
  seq          INTEGER NOT NULL,
  created_at   TEXT NOT NULL
);
CREATE INDEX turns_by_thread ON turns (thread_id, seq);
CREATE INDEX turns_pending ON turns (state, seq) WHERE role = 'user';

CREATE TABLE telemetry_turns (
  id               TEXT PRIMARY KEY,
  tenant           TEXT NOT NULL,
  kind             TEXT NOT NULL CHECK (kind IN ('search', 'ask', 'chat')),
  query            TEXT NOT NULL,
  model            TEXT NOT NULL DEFAULT '',
  persona          TEXT NOT NULL DEFAULT '',
  prompt_version   TEXT NOT NULL DEFAULT '',
  grounding_score  DOUBLE PRECISION,
  abstained        INTEGER NOT NULL DEFAULT 0,
  latency_ms       DOUBLE PRECISION NOT NULL,
  conversation_id  TEXT REFERENCES conversations (id) ON DELETE CASCADE,
  created_at       TEXT NOT NULL,
  rowid            BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE telemetry_retrievals (
  turn_id         TEXT NOT NULL REFERENCES telemetry_turns (id) ON DELETE CASCADE,
  item_id         TEXT NOT NULL,
  final_rank      INTEGER NOT NULL,
  fused_score     DOUBLE PRECISION NOT NULL,
  channel_scores  TEXT NOT NULL,  -- JSON object: channel -> score
  cited           INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (turn_id, item_id)
);

CREATE TABLE llm_log (
  id                 TEXT PRIMARY KEY,
  request_id         TEXT NOT NULL,
  purpose            TEXT NOT NULL,
  model              TEXT NOT NULL,
  persona            TEXT NOT NULL,
  prompt             TEXT NOT NULL,
  response           TEXT NOT NULL DEFAULT '',
  prompt_tokens      INTEGER NOT NULL DEFAULT 0,
  completion_tokens  INTEGER NOT NULL DEFAULT 0,
  latency_ms         DOUBLE PRECISION NOT NULL DEFAULT 0,
  outcome            TEXT NOT NULL DEFAULT 'started',
  created_at         TEXT NOT NULL
);


-- migration 2
-- SPEC B1: the plan steps an ask dropped as invalid are reported in its telemetry (JSON array).
ALTER TABLE telemetry_turns ADD COLUMN dropped_steps TEXT NOT NULL DEFAULT '[]';

-- migration 3
-- What an ask answered, kept with its telemetry turn so `memex eval --replay` can ask it again and
-- show what changed: the answer text and the refs of the citations kept (JSON array of strings).
-- Rows logged before this migration keep '' and '[]'.
ALTER TABLE telemetry_turns ADD COLUMN answer TEXT NOT NULL DEFAULT '';
ALTER TABLE telemetry_turns ADD COLUMN cited_refs TEXT NOT NULL DEFAULT '[]';
CREATE INDEX telemetry_turns_by_kind ON telemetry_turns (tenant, kind, created_at DESC);

-- migration 4
-- Issue 11: a queued turn's answer follows the read policy like any other. Whether its request
-- let the model see sensitive notes is kept with the user turn, since the worker answers later.
-- Turns queued before this migration read 0: sensitive notes withheld, the safe reading.
ALTER TABLE turns ADD COLUMN include_sensitive INTEGER NOT NULL DEFAULT 0;

-- migration 5
-- A chat reply that drew on sensitive notes is marked, so a later message in the same
-- conversation that did not ask for sensitive notes never sends it to the model as history.
-- Replies stored before this migration are marked: whether they drew on sensitive notes is not
-- known, and withholding is the safe reading.
ALTER TABLE messages ADD COLUMN sensitive INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET sensitive = 1 WHERE role = 'assistant';

-- migration 6
-- Issue 14: an LLM log call records the tenant it served, so forgetting one tenant's note counts
-- and erases only that tenant's calls. Calls logged before read '' (whose they were is unknown)
-- and are still searched for every tenant, as they were before.
ALTER TABLE llm_log ADD COLUMN tenant TEXT NOT NULL DEFAULT '';

-- migration 7
-- Issue 35: the claim check of an ask or chat reply, kept with its telemetry turn: every specific
-- the answer stated with its verdict and the source that holds it (JSON array of objects
-- {text, kind, verdict, ref}), and the sentences cut for an unsupported one (JSON array).
ALTER TABLE telemetry_turns ADD COLUMN claim_check TEXT NOT NULL DEFAULT '[]';
ALTER TABLE telemetry_turns ADD COLUMN dropped_claims TEXT NOT NULL DEFAULT '[]';

-- migration 8
-- Issue 37: the evidence bundle of each answer (an ask, a chat reply, a queued turn's answer),
-- written once, in the transaction of its telemetry turn, when the answer is final: one JSON
-- document (evidence.py; docs/evidence.md). A chat reply's message and a queued answer's turn
-- name it too, so whichever id a client holds finds it; the bundle goes with its telemetry turn
-- (a forgotten note, a deleted conversation), its message or its turn (a deleted thread).
CREATE TABLE evidence (
  turn_id        TEXT PRIMARY KEY REFERENCES telemetry_turns (id) ON DELETE CASCADE,
  tenant         TEXT NOT NULL,
  message_id     TEXT REFERENCES messages (id) ON DELETE CASCADE,
  reply_turn_id  TEXT REFERENCES turns (id) ON DELETE CASCADE,
  bundle         TEXT NOT NULL,
  created_at     TEXT NOT NULL
);
CREATE INDEX evidence_by_message ON evidence (message_id);
CREATE INDEX evidence_by_reply ON evidence (reply_turn_id);

-- migration 9
-- Issue 37: a queued question may be asked as of a day, like an ask or a chat message; the day is
-- kept with the user turn, since the worker answers later. Turns queued before read '' (now).
ALTER TABLE turns ADD COLUMN as_of TEXT NOT NULL DEFAULT '';

-- migration 10
-- Issue 37: a nightly job's run for a tenant and day, claimed by the first worker replica that
-- starts it (``TurnQueue.claim_nightly``), so N workers make one reflect run a night, not N.
CREATE TABLE nightly_runs (
  job         TEXT NOT NULL,
  tenant      TEXT NOT NULL,
  day         TEXT NOT NULL,
  worker_id   TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  PRIMARY KEY (job, tenant, day)
);

-- migration 11
-- Issue 37: the chat conversation a model call served ('' for an ask, a queued turn, reflect), so
-- that deleting a conversation erases its calls' text as deleting a thread erases its turns'.
ALTER TABLE llm_log ADD COLUMN conversation_id TEXT NOT NULL DEFAULT '';
CREATE INDEX llm_log_by_conversation ON llm_log (conversation_id);
