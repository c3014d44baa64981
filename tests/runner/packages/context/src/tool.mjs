// A function package that reports the call context its handler receives (the seeds' table), run through
// the real runner, host and sandbox by tests/runner/functionContext.test.ts.
import { defineTool } from "@caplo/tools";

const attempt = (run) => {
  try {
    return run();
  } catch (error) {
    return `throws: ${error.message}`;
  }
};

export default defineTool({
  name: "probe",
  description: "Reports its call context.",
  inputSchema: { type: "object", properties: { hang: { type: "boolean" }, say: { type: "string" }, ask: { type: "string" } }, additionalProperties: false },
  async handler({ hang, say, ask }, ctx) {
    if (say !== undefined) return say;
    if (ask !== undefined) {
      // Asks the visitor for one field; what comes back is the answer as the runner passed it on.
      let answer;
      try {
        answer = await ctx.elicit({ message: `Which ${ask}?`, requestedSchema: { type: "object", properties: { [ask]: { type: "string" } }, required: [ask] } });
      } catch (error) {
        answer = `throws: ${error.message}`;
      }
      return { canElicit: ctx.canElicit, answer };
    }
    // Log calls that cannot be serialised or are misused never fail the tool.
    const hostile = { toJSON() { throw new Error("toJSON fails"); } };
    ctx.log.info("probe started", hostile);
    ctx.log.warn(undefined, 10n);
    ctx.log.debug("with the key", { key: attempt(() => ctx.secrets.get("API_KEY")) });
    if (hang) {
      ctx.log.info("fetching a host that never answers");
      await fetch("http://allowed.test/hang", { signal: ctx.signal });
      return "answered";
    }
    return {
      keys: Object.keys(ctx).sort(),
      invocationId: ctx.invocationId,
      conversationId: ctx.conversationId ?? null,
      turnId: ctx.turnId ?? null,
      workspaceId: ctx.workspaceId ?? null,
      packageVersionId: ctx.packageVersionId ?? null,
      deadline: ctx.deadline.toISOString(),
      signalAborted: ctx.signal.aborted,
      idempotencyKey: ctx.idempotencyKey ?? null,
      subject: ctx.subject ?? null,
      requireSubject: attempt(() => ctx.requireSubject().id),
      canElicit: ctx.canElicit,
      secrets: {
        has: ["API_KEY", "MISSING_KEY", "OTHER"].map((name) => ctx.secrets.has(name)),
        apiKeyLength: attempt(() => ctx.secrets.get("API_KEY").length),
        missing: attempt(() => ctx.secrets.get("MISSING_KEY")),
        undeclared: attempt(() => ctx.secrets.get("OTHER")),
      },
      env: Object.keys(process.env).sort(),
    };
  },
});
