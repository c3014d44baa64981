// The start/stop stack of the composition root: each component is pushed with how to stop it once it
// has started, and stopping runs last-first, so what started later (and may use what started before) stops
// first. A start that fails part way stops what it had started, and leaves nothing running.
export class StartStack {
  private readonly stops: { name: string; stop: () => Promise<void> | void }[] = [];

  /** Records a started component; `stop` runs when the stack unwinds. Returns the component. */
  push<T>(name: string, component: T, stop: (component: T) => Promise<void> | void): T {
    this.stops.push({ name, stop: () => stop(component) });
    return component;
  }

  /** The names of the started components, in start order. */
  get started(): string[] {
    return this.stops.map((entry) => entry.name);
  }

  /**
   * Stops every component, last first. A component whose stop fails does not keep the others running:
   * the rest still stop, and the first failure is thrown afterwards.
   */
  async stopAll(): Promise<void> {
    let failure: unknown;
    for (let entry = this.stops.pop(); entry; entry = this.stops.pop()) {
      try {
        await entry.stop();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  }
}
