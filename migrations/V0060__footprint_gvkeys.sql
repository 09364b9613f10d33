-- Frozen footprints keep the firm's gvkey next to its firm id. Firm ids are the build's
-- own numbering (row_number over gvkey), so a rebuild on a different raw panel renumbers
-- them; sql/eval/040 maps a frozen cell or origin to the current build through its gvkey.
-- Rows frozen before this migration have gvkey NULL and keep meaning their firm id.
ALTER TABLE eval.footprint_cells ADD COLUMN gvkey VARCHAR;
ALTER TABLE eval.footprint_origins ADD COLUMN gvkey VARCHAR;
