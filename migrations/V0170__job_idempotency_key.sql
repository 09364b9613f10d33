-- A retried upload is one upload (issue 52): the client names each upload with an
-- Idempotency-Key header, recorded on its job, and the door answers a repeat of a key
-- the user has already used with that job (no second file, no second count against the
-- daily limit). Keys are unique per user; the door checks and inserts under one lock.
ALTER TABLE service.jobs ADD COLUMN idempotency_key VARCHAR;
