// Process-wide settings of the process serving a package: the secret names caplo.yaml declares (set by
// host.ts) and, for local development only, secret values read from the environment by serveStdio.
// Kept on globalThis under a Symbol.for key so every copy of the SDK in the process sees the same.

export type Runtime = {
  /** Secret names the package declares; undefined when unknown (any name the call carries is allowed). */
  declaredSecrets?: ReadonlySet<string>;
  /** serveStdio's values from same-named environment variables; used only when a call carries no context. */
  localSecrets: ReadonlyMap<string, string>;
};

const KEY = Symbol.for("si.caplo/tools.runtime");
type Holder = { [KEY]?: Runtime };

export function runtime(): Runtime {
  const holder = globalThis as Holder;
  holder[KEY] ??= { localSecrets: new Map() };
  return holder[KEY];
}

export function setDeclaredSecrets(names: readonly string[]): void {
  runtime().declaredSecrets = new Set(names);
}

export function setLocalSecrets(values: ReadonlyMap<string, string>): void {
  runtime().localSecrets = values;
}
