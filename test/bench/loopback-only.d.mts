/** Types of loopback-only.mjs (plain JavaScript, so that a child preloads it without a TypeScript loader). */
export declare function isLoopbackAddress(address: string): boolean;
export declare const REFUSED_MARK: string;
