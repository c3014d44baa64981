// The part of Eleventy's programmatic API the docs site uses (the package ships no types).
declare module "@11ty/eleventy" {
  export class Eleventy {
    constructor(input: string, output: string, options?: { quietMode?: boolean; configPath?: string });
    write(): Promise<unknown>;
  }
}
