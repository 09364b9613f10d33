-- The normal tail given its exponent: eval.norm_tail_given(a, e) is eval.norm_tail(a)
-- for e = exp(-a * a / 2), so that a cell's score computes that exponent once for its
-- tail, its density and its CRPS (057: a Gaussian cell's terms took a fifth longer with
-- the exponent computed twice). eval.norm_tail is redefined through it, the same
-- expression once expanded (V0030: Hart's rational approximation, West 2005), so the
-- coefficients have one definition.
CREATE MACRO eval.norm_tail_given(a, e) AS (
    CASE
        WHEN a > 37 THEN 0.0
        WHEN a < 7.07106781186547 THEN e
            * ((((((3.52624965998911e-02 * a + 0.700383064443688) * a + 6.37396220353165) * a
                + 33.912866078383) * a + 112.079291497871) * a + 221.213596169931) * a
                + 220.206867912376)
            / (((((((8.83883476483184e-02 * a + 1.75566716318264) * a + 16.064177579207) * a
                + 86.7807322029461) * a + 296.564248779674) * a + 637.333633378831) * a
                + 793.826512519948) * a + 440.413735824752)
        ELSE e / (a + 1 / (a + 2 / (a + 3 / (a + 4 / (a + 0.65))))) / 2.506628274631
    END
);
CREATE OR REPLACE MACRO eval.norm_tail(a) AS eval.norm_tail_given(a, exp(-a * a / 2));
