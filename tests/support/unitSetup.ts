// Run before every test file of `npm run test:unit`, which shares each worker's modules between files
// (isolate: false, vitest.unit.config.ts). A hook registered when a module is first imported (the widget's
// testing.tsx registers testing-library's cleanup that way, since Vitest's globals are off) is registered
// once per worker, not once per file; this registers it for every file: what a test rendered is unmounted
// after it, and a file leaves no DOM for the next file in its worker.
import { afterEach } from "vitest";

afterEach(async () => {
  if (typeof document === "undefined") return;
  const { cleanup } = await import("@testing-library/preact");
  cleanup();
});
