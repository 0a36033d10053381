-- A submission whose grading job died (attempts spent, or its lease lost for good) is
-- `error`, with the reason, instead of waiting as `queued` forever.
ALTER TABLE missions.submission DROP CONSTRAINT submission_status_check;
ALTER TABLE missions.submission
  ADD CONSTRAINT submission_status_check CHECK (status IN ('queued', 'passed', 'failed', 'error'));
ALTER TABLE missions.submission ADD COLUMN error text;
