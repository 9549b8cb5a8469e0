// Log levels a worker accepts in LOG_LEVEL.
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];
