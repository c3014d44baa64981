// Each store a test runs on: SQLite in a real file and PostgreSQL (the machine's, or one tests/support/
// globalSetup.ts started) in a schema of its own, dropped afterwards; opened (and migrated) as often as the test
// needs (two opens are two nodes on one database), with raw SQL for what a test checks or breaks underneath the
// store (rows as kept, a trigger refusing an insert). `describeEachStore` runs a suite on both with two stores
// open (the store's port contract suites, secrets); the small builders the suites share follow it.
import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import type { ChannelCapabilities, Outbound } from "@caplo/shared";
import { testPg } from "../../../../tests/support/services.ts";
import { openStore } from "../index.ts";
import { PostgresStore } from "../postgresStore.ts";
import type { ConversationRecord, NewWrite, Store } from "../store.ts";

export type StoreHarness = {
  name: "sqlite" | "postgres";
  /** A new store on the harness's database, migrated. */
  open: () => Promise<Store>;
  /** Where a server finds this database: the SQLite file's path, or a postgres:// URL (schema by `schema`). */
  location: string;
  /** The PostgreSQL schema (undefined for SQLite). */
  schema?: string;
  /** Raw SQL on the database: a SELECT's rows, else the statements are run and [] returned. */
  sql: (text: string) => Promise<Array<Record<string, unknown>>>;
  cleanup: () => Promise<void>;
};

export function sqliteHarness(): StoreHarness {
  const dir = mkdtempSync(join(tmpdir(), "caplo-store-"));
  const path = join(dir, "caplo.db");
  return {
    name: "sqlite",
    location: path,
    open: () => openStore(path),
    sql: async (text) => {
      const db = new Database(path);
      try {
        if (/^\s*select\b/i.test(text)) return db.prepare(text).all() as Array<Record<string, unknown>>;
        db.exec(text);
        return [];
      } finally {
        db.close();
      }
    },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function postgresHarness(prefix = "caplo_test"): StoreHarness {
  const schema = `${prefix}_${process.pid}_${randomBytes(4).toString("hex")}`;
  const settings = { ...testPg(), schema };
  const url = new URL(`postgres://${encodeURIComponent(settings.user)}${settings.password ? `:${encodeURIComponent(settings.password)}` : ""}@${settings.host}:${settings.port}/${encodeURIComponent(settings.database)}`);
  return {
    name: "postgres",
    location: url.toString(),
    schema,
    open: () => openStore(url.toString(), { schema }),
    sql: async (text) => {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ ...testPg(), options: `-c search_path=${schema}` });
      await client.connect();
      try {
        const result = await client.query(text);
        return Array.isArray(result) ? [] : (result.rows as Array<Record<string, unknown>>);
      } finally {
        await client.end();
      }
    },
    cleanup: async () => {
      const store = new PostgresStore(settings);
      await store.dropSchema();
      await store.close();
    },
  };
}

/** Both stores, for `describe.each(eachStore())`. */
export function eachStore(prefix?: string): StoreHarness[] {
  return [sqliteHarness(), postgresHarness(prefix)];
}

/** What a suite run on one kind of store gets: two stores on one database, reopening, and raw SQL underneath. */
export type EachStore = {
  readonly kind: StoreHarness["name"];
  /** The store under test: stands for the instance open now (a new one after `reopen`). */
  readonly store: Store;
  /** A second instance on the same database: another node. */
  readonly second: Store;
  /** Closes the first store and opens the database again: what was stored must still be there. */
  reopen: () => Promise<void>;
  /** A new conversation in the store under test (see newConversation). */
  conversation: (overrides?: ConversationOverrides) => Promise<ConversationRecord>;
  /** Raw SQL on the database (StoreHarness.sql). */
  sql: StoreHarness["sql"];
};

/** A stand-in that forwards to whichever instance `current()` answers (a suite's stores open only once it runs). */
export function forwarding<T extends object>(current: () => T | undefined): T {
  return new Proxy({} as T, {
    get: (_target, name) => {
      const instance = current();
      if (!instance) throw new Error("the stores are open only inside the suite's tests");
      const value: unknown = Reflect.get(instance, name, instance);
      return typeof value === "function" ? value.bind(instance) : value;
    },
  });
}

/**
 * Runs `suite` on SQLite and on PostgreSQL, titled `title (sqlite)` and `title (postgres)`. The stores are
 * opened before the suite's tests and closed (the database removed) after them.
 */
export function describeEachStore(title: string, suite: (each: EachStore) => void): void {
  describe.each(eachStore())(`${title} ($name)`, (db) => {
    let first: Store | undefined;
    let second: Store | undefined;
    beforeAll(async () => {
      first = await db.open();
      second = await db.open();
    });
    afterAll(async () => {
      await first?.close();
      await second?.close();
      await db.cleanup();
    });
    const store = forwarding(() => first);
    suite({
      kind: db.name,
      store,
      second: forwarding(() => second),
      reopen: async () => {
        await first?.close();
        first = await db.open();
      },
      conversation: (overrides) => newConversation(store, overrides),
      sql: db.sql,
    });
  });
}

let counter = 0;
/** A number this run has not given before (1, 2, 3, ...). */
export const sequence = () => ++counter;
/** An id no other test of this run uses (the databases are shared by every test of a suite). */
export const uid = (prefix: string) => `${prefix}_${process.pid}_${sequence()}_${randomBytes(3).toString("hex")}`;

export const CAPABILITIES: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true };

/** An agent's text event. */
export function text(value: string): Outbound {
  return { type: "text", id: uid("m"), from: "agent", text: value };
}

export type ConversationOverrides = { externalId?: string; resumeHash?: string; workspaceId?: string };

/** A new web conversation of the agent `shop` (in the default workspace unless told). */
export function newConversation(store: Pick<Store, "createConversation">, overrides: ConversationOverrides = {}): Promise<ConversationRecord> {
  return store.createConversation({
    id: uid("c"),
    workspaceId: overrides.workspaceId ?? "default",
    agent: "shop",
    releaseId: "shop@sha256:" + "1".repeat(64),
    channel: "web",
    externalId: overrides.externalId ?? null,
    resumeHash: overrides.resumeHash ?? null,
    ownerId: "owner-a",
    capabilities: CAPABILITIES,
    createdAt: Date.now(),
  });
}

/** A proposed write of cancel_order in the conversation. */
export function newWrite(conversationId: string, overrides: Partial<NewWrite> = {}): NewWrite {
  return {
    id: uid("w"),
    conversationId,
    turnId: "t1",
    callId: "call_1",
    toolRef: "orders/cancel_order",
    modelName: "orders__cancel_order",
    packageVersionId: "orders@sha256:" + "0".repeat(64),
    tool: "cancel_order",
    args: { orderId: "SO-1002" },
    state: "proposed",
    confirmation: "required",
    ownerId: "owner-a",
    subjectId: null,
    createdAt: 1000,
    ...overrides,
  };
}

/** The text of a text event ("" for any other). */
export const textOf = (message: Outbound): string => (message.type === "text" ? message.text : "");
