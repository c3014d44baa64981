// Secrets from the environment (CAPLO_SECRET_<NAME>), read when a call needs the value. The server's
// workspace secrets live in its store (secrets/workspaceSecrets.ts), which falls back to these for the
// default workspace; commands without a store (tool test, eval) read them through here.
import { SECRET_NAME_PATTERN } from "@caplo/shared";

export type SecretSource = {
  /** The value of workspace secret `name`, or undefined when it has none. Never logged by callers. */
  get(name: string): string | undefined;
  /** The values of the named secrets that have one. */
  values(names: readonly string[]): Record<string, string>;
};

/** Secrets from CAPLO_SECRET_<NAME> of `env`, read at each call (env is the live process.env in `caplo serve`). */
export function envSecrets(env: Readonly<Record<string, string | undefined>>): SecretSource {
  const get = (name: string) => (SECRET_NAME_PATTERN.test(name) ? env[`CAPLO_SECRET_${name}`] : undefined);
  return {
    get,
    values: (names) => {
      const values: Record<string, string> = {};
      for (const name of names) {
        const value = get(name);
        if (value !== undefined) values[name] = value;
      }
      return values;
    },
  };
}
