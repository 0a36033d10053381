/** Public API of Sluice. Everything not exported here is internal. */
export { Sluice, type SluiceOptions, type Readiness } from './sluice.js';
export { unavailableError } from './db/unavailable.js';
export { inTransaction } from './db/db.js';
export {
  SluiceError,
  ValidationError,
  PayloadTooLargeError,
  QueueNotFoundError,
  JobNotFoundError,
  QueueFullError,
  AdmissionUnavailableError,
  KeyLimitError,
  InvalidStateError,
  LeaseLostError,
  ParentNotFoundError,
  FlowInvalidError,
  JobDeadError,
  JobCancelledError,
  ResultTimeoutError,
  SchemaVersionError,
  ClosedError,
  httpStatusOf,
  httpAnswerOf,
  type ErrorCode,
  type HttpAnswer,
  type UnavailableReason,
} from './errors.js';
export type { Worker, WorkOptions, Handler, JobContext } from './worker/worker.js';
export { Discard, Snooze, JobTimeout, JobCancelled } from './worker/outcomes.js';
export type { TickResult } from './maintenance/maintenance.js';
export type { Schedule, SchedulePolicy, CatchUp } from './maintenance/schedules.js';
export type { DeadLetterFilter, DeadLetterPage } from './queue/dead-letters.js';
export { END_EVENTS, type EndEvent, type EndSubscription, type EndDelivery } from './queue/subscriptions.js';
export type { Counts, QueueCounts } from './queue/counts.js';
export { JOB_STATES, MAX_JOB_PAGE, type JobFilter, type JobPage } from './queue/job-list.js';
export { MAX_SERIES_MINUTES, type QueueSeries, type SeriesPoint } from './queue/series.js';
export type { JobEvent, JobEventIterator, ResultOptions, EventsOptions } from './queue/results.js';
export { migrateSchema, type MigrateResult, type SchemaMigration } from './db/migrate.js';
export type {
  Job,
  ClaimedJob,
  JobState,
  JobAttemptError,
  Queue,
  QueuePolicy,
  BackoffPolicy,
  RetentionPolicy,
  QueueStats,
  EstimatedCount,
  WindowUse,
  RateLimit,
  Budget,
  Durability,
  ThroughputBucket,
  CompleteOptions,
  SendOptions,
  SendManyItem,
  SendResult,
  FlowJob,
  JobParent,
  JobChild,
  JobLogLine,
  JobLogPage,
  Debounce,
  Logger,
  SluiceEvents,
  JobIds,
  FreedSlot,
} from './types.js';
