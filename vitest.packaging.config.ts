// The packaging test (tests/packaging): the `caplo` and `@caplo/tools` tarballs packed from this checkout and
// installed, they alone, into an empty folder outside it, where the installed command is used as a newcomer
// would. Installing takes a minute or two, so `npm run test:packaging` (run by .ci/run) runs it and
// `npm test` leaves it out. It needs no PostgreSQL, Redis or Chromium (the server it starts uses SQLite).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/packaging/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 600_000,
    pool: "forks",
    reporters: ["default"],
  },
});
