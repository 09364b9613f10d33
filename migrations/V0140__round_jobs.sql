-- Round submissions through the upload job queue (issue 47): a job names the round its
-- file enters, or none for the static benchmark. A round file is then received, counted
-- against the user's daily limit, checked and stored by the one worker, as every upload.
ALTER TABLE service.jobs ADD COLUMN round_name VARCHAR;
