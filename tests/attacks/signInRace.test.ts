// Two sign-ins racing on one resume token (tests/attacks/README.md): the visitor signs in while someone who
// copied the token from before sign-in (or another tab) signs in as another customer, on the same node or on
// another, on PostgreSQL (real I/O between the steps). The sign-in set the conversation's subject and then
// replaced the resume token, two steps: the loser of the token's compare-and-set had often already set its
// subject, so whoever held the new token owned a conversation verified as the other customer. Now the token
// is replaced first, in the engine's step that sets the subject, and only the winner sets it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Gateway } from "../../server/src/gateway/index.ts";
import { mintIdentityToken } from "../../server/src/identity/index.ts";
import { postgresHarness, type StoreHarness } from "../../server/src/store/testing/storeHarness.ts";
import { answerTo, isT, OpenClients, type TestClient } from "../gateway/support/client.ts";
import { hs256Identity, ORIGIN, shopRelease, startStack, type Stack } from "../gateway/support/stack.ts";

const SECRET = "the-shop-sites-identity-secret-of-32-bytes!";
const secrets = (name: string) => (name === "SITE_IDENTITY_SECRET" ? SECRET : undefined);
let harness: StoreHarness;
let stack: Stack | undefined;
let other: Gateway | undefined;
let otherWsUrl = "";
const clients = new OpenClients();

beforeAll(async () => {
  harness = postgresHarness("caplo_signin_race");
  const store = await harness.open();
  stack = await startStack({ store: () => store, nodeId: "race", gateway: { secrets }, releases: (version) => [shopRelease(version, { identity: hs256Identity("SITE_IDENTITY_SECRET") })] });
  // A second node on the same store and bus.
  other = new Gateway({ engine: stack.engine, releases: stack.releases, secrets });
  otherWsUrl = `ws://127.0.0.1:${(await other.listen(0, "127.0.0.1")).port}/v1/ws`;
}, 60_000);
afterAll(async () => {
  await clients.closeAll();
  await other?.close();
  await stack?.close();
  await harness?.cleanup();
});

const signIn = (sub: string) => mintIdentityToken({ algorithm: "HS256", secret: SECRET, claims: { sub, level: "standard" } });
/** The answer to `ref`, or "closed" when the socket was closed (4409) before it. */
const answerOf = (c: TestClient, ref: string) => c.waitFor(answerTo(ref)).catch(() => ({ t: "closed" as const, code: c.closed?.code }));

describe("two sign-ins racing on one resume token", () => {
  it("twelve races, on one node and on two, in either order: the conversation is verified as the customer whose socket got the new token, and that token resumes it", async () => {
    const mismatches: string[] = [];
    for (let round = 0; round < 12; round++) {
      const visitor = await clients.open(stack!.wsUrl, ORIGIN);
      const welcome = await visitor.hello("shop-agent");
      const copier = await clients.open(round % 2 === 0 ? stack!.wsUrl : otherWsUrl, ORIGIN);
      await copier.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
      const visitorSub = `visitor-${round}`;
      const copierSub = `copier-${round}`;
      // Both in flight at once; which goes first varies, and by how little (0 to 2 ms).
      const [first, second] = round % 4 < 2 ? [[visitor, visitorSub], [copier, copierSub]] as const : [[copier, copierSub], [visitor, visitorSub]] as const;
      first[0].send({ t: "identify", ref: "sign-in", token: signIn(first[1]) });
      if (round % 3 > 0) await new Promise((resolve) => setTimeout(resolve, round % 3));
      second[0].send({ t: "identify", ref: "sign-in", token: signIn(second[1]) });
      const answers = [await answerOf(first[0], "sign-in"), await answerOf(second[0], "sign-in")];
      const acked = answers.flatMap((answer, index) => (answer.t === "ack" ? [[first, second][index]!] : []));
      expect(acked, `round ${round}: ${JSON.stringify(answers)}`).toHaveLength(1);
      const [, winnerSub] = acked[0]!;
      const ack = answers.find((answer) => answer.t === "ack") as { resumeToken?: string };
      // The loser was told its token was replaced (or closed for it), and nothing of its sign-in stayed.
      const loser = answers.find((answer) => answer.t !== "ack") as { t: string; code?: string | number };
      expect([loser.t === "closed" ? loser.code : loser.code], `round ${round}`).toEqual([loser.t === "closed" ? 4409 : "resume_rotated"]);
      const subject = (await stack!.store.getConversation(welcome.conversationId))?.subject?.id;
      if (subject !== winnerSub) mismatches.push(`round ${round}: token went to ${winnerSub}, conversation verified as ${subject}`);
      // The new token resumes the verified conversation; the old one opens nothing of it.
      const back = await clients.open(stack!.wsUrl, ORIGIN);
      const resumed = await back.hello("shop-agent", { token: ack.resumeToken!, after: 0 });
      expect(resumed).toMatchObject({ conversationId: welcome.conversationId, verified: true });
      const old = await clients.open(otherWsUrl, ORIGIN);
      expect((await old.hello("shop-agent", { token: welcome.resumeToken, after: 0 })).conversationId).not.toBe(welcome.conversationId);
      await clients.closeAll();
    }
    expect(mismatches).toEqual([]);
  }, 120_000);

  it("a hello resuming with the token from before sign-in, sent as the visitor signs in, never receives what is stored after it", async () => {
    // The hello read the conversation by the old token, the sign-in replaced the token and closed the old
    // token's sockets it knew of, and then the hello joined: welcomed, it was sent the conversation's events,
    // those after sign-in too (13 of 30 rounds here). Now the hello reads the token again once joined.
    const leaks: string[] = [];
    for (let round = 0; round < 24; round++) {
      const visitor = await clients.open(stack!.wsUrl, ORIGIN);
      const welcome = await visitor.hello("shop-agent");
      const copier = await clients.open(stack!.wsUrl, ORIGIN);
      visitor.send({ t: "identify", ref: "sign-in", token: signIn(`visitor-hello-${round}`) });
      if (round % 3 > 0) await new Promise((resolve) => setTimeout(resolve, round % 3));
      copier.send({ t: "hello", v: 1, agent: "shop-agent", capabilities: {}, resume: { token: welcome.resumeToken, after: 0 } });
      expect(await visitor.waitFor(answerTo("sign-in"))).toMatchObject({ t: "ack" });
      const id = `m_after_sign_in_${round}`;
      await stack!.engine.emit(welcome.conversationId, { type: "text", id, from: "system", text: "for the signed-in visitor only" });
      await visitor.waitFor(isT("event", (frame) => frame.message.id === id));
      // The copier is either in a new conversation of its own, or was closed (4409) before that event.
      const copierWelcome = await copier.waitFor(isT("welcome")).catch(() => undefined);
      if (copierWelcome?.conversationId === welcome.conversationId) await copier.waitFor(() => copier.closed !== undefined, 2000).catch(() => undefined);
      else await new Promise((resolve) => setTimeout(resolve, 50));
      if (copier.events().some((event) => event.message.id === id)) leaks.push(`round ${round}: the old token's socket was sent the event stored after sign-in`);
      if (copierWelcome?.conversationId === welcome.conversationId && copier.closed?.code !== 4409) leaks.push(`round ${round}: the old token's socket is still open in the verified conversation`);
      await clients.closeAll();
    }
    expect(leaks).toEqual([]);
  }, 120_000);
});
