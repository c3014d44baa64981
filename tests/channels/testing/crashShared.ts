// What the crash test's parent and its dying child agree on: the model's script and the one message.
export const CRASH_PAGE = "105000000000001";
export const CRASH_CUSTOMER = "7000000000000001";
export const CRASH_RULES = [{ when: /hello/i, replies: [{ text: "Hello there." }] }];

export function crashEvent() {
  return { kind: "message", messageId: "m_crash", from: CRASH_CUSTOMER, to: CRASH_PAGE, timestamp: Date.now(), text: "hello" };
}
