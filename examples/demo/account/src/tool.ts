// update_address: changes the verified customer's delivery address. The shop wants a high-level sign-in
// from the last five minutes and says so with an RFC 9470 challenge, which becomes a step-up request.
import { applied, defineTool, pending, rejected, stepUpFromChallenge, stepUpRequired } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Input = { customerId?: string; street: string; postalCode: string; city: string };
type Output = { customerId: string; street: string; postalCode: string; city: string; updatedAt: string };

type ShopAddressChange = { customerId: string; address: { street: string; postalCode: string; city: string }; updatedAt: string };

function toOutput(body: ShopAddressChange): Output {
  return { customerId: body.customerId, street: body.address.street, postalCode: body.address.postalCode, city: body.address.city, updatedAt: body.updatedAt };
}

export default defineTool<Input, Output>({
  name: "update_address",
  description: "Change the signed-in customer's delivery address. Only for a verified customer; give the new street, postal code and city.",
  inputSchema: {
    type: "object",
    properties: {
      customerId: { type: "string", pattern: "^CUS-[0-9]{4}$", description: "Filled in by Caplo for the verified customer; never set it" },
      street: { type: "string", minLength: 1, maxLength: 100, description: "Street and house number" },
      postalCode: { type: "string", pattern: "^[0-9]{4}$", description: "Four-digit postal code" },
      city: { type: "string", minLength: 1, maxLength: 100 },
    },
    required: ["street", "postalCode", "city"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      customerId: { type: "string" },
      street: { type: "string" },
      postalCode: { type: "string" },
      city: { type: "string" },
      updatedAt: { type: "string", format: "date-time" },
    },
    required: ["customerId", "street", "postalCode", "city", "updatedAt"],
  },
  async handler({ customerId, street, postalCode, city }, ctx) {
    const { secrets, signal, idempotencyKey, log } = ctx;
    // The subject comes from Caplo's verification, never from the model.
    const subject = ctx.requireSubject();
    const account = customerId ?? subject.ref ?? subject.id;
    // A low-level sign-in can never pass the shop's check: ask for the step-up without a round trip.
    if (subject.level === "low") return stepUpRequired({ level: "high", maxAuthAgeSeconds: 300 });
    // Exchange the verified customer (how strongly and when they signed in) for a customer token.
    const exchange = await fetch(shopUrl(secrets, "/auth/token"), {
      method: "POST",
      headers: shopHeaders(secrets, { "content-type": "application/json" }),
      body: JSON.stringify({ customerId: account, acr: subject.level, authTime: subject.authTime }),
      signal,
    });
    if (exchange.status === 400) return rejected("Your account could not be found in the shop.");
    if (!exchange.ok) throw new Error(`token exchange failed with ${exchange.status}`);
    const { access_token: token } = (await exchange.json()) as { access_token: string };

    const response = await fetch(shopUrl(secrets, `/customers/${encodeURIComponent(account)}/address`), {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": idempotencyKey ?? "" },
      body: JSON.stringify({ street, postalCode, city }),
      signal,
    });
    if (response.status === 401) {
      // Not strong or recent enough: ask the customer to verify again; nothing was changed.
      const stepUp = stepUpFromChallenge(response.headers.get("www-authenticate"));
      if (stepUp) return stepUp;
    }
    if (response.status === 403) return rejected("This address belongs to another account.");
    if (response.status === 400) return rejected("The shop refused that address; check the street, postal code and city.");
    if (response.status !== 200) throw new Error(`address change failed with ${response.status}`);
    const body = (await response.json()) as ShopAddressChange;
    log.info("address changed", { customerId: body.customerId });
    return toOutput(body);
  },
  async status(_request, { secrets, signal, idempotencyKey }) {
    const response = await fetch(shopUrl(secrets, `/operations?${new URLSearchParams({ key: idempotencyKey ?? "" })}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`status lookup failed with ${response.status}`);
    const body = (await response.json()) as { status: string; operationId: string; result?: ShopAddressChange };
    if (body.status === "applied" && body.result) return applied(toOutput(body.result));
    if (body.status === "not_applied") return rejected("The address was not changed.");
    if (body.status === "pending") return pending(body.operationId);
    throw new Error(`unexpected status ${body.status}`);
  },
});
