// The base of the platform's own errors. Code that decides what to do about an error matches its class
// (`instanceof`), never its message: messages are for people and may be reworded.
export class PlatformError extends Error {}
