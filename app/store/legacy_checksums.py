"""Every shipped migration's checksum as releases before 2026-12 recorded it (sqlglot's
regenerated SQL, `proforma.app.store.sqlfiles.checksum`, sqlglot 30.31), beside the
text checksum of the same file (`proforma.app.store.migration_checksums.text_checksum`).

Frozen here so that a warehouse made by an earlier release opens whatever sqlglot
release is installed: `migration_checksums.accepted` takes a recorded checksum found
here when the file's text checksum is the one beside it, and `migrate` rewrites the row
to the text checksum. Never edited; a migration added later needs no entry (its
checksum is the text checksum from the start).

{version: (recorded by earlier releases, text checksum)}
"""

LEGACY: dict[int, tuple[str, str]] = {
    1: (
        "41361c6dcdb40d558fcfc7e666d9023f88e21e95c7dead7898936ce6b2c92c96",
        "8e0b0937ce03cdc8e99e08601489a82e71a5b356e69d04344a157671c0a1f15f",
    ),  # raw_schema
    2: (
        "fcb46230e7edab2a241b7cf7c69476166b7aeb74204a1a2a5e2cfa6883d1f927",
        "ece276697c01100cac175dbf3860bb6b60adbd642e33a170efc510bcefe5d671",
    ),  # reference
    3: (
        "f445dad1cd92adb5942feca6114e9b824beb62266a70c0a26ee2163c18b0d10c",
        "09213b1f7bfe8c906ef76cd7fc15aa4c23025ed713015d473e079e59a4124a39",
    ),  # quarter_macros
    10: (
        "bb89da46353fe99c92ba0a32a93ca2e3fbf40141407edebb5bb57cc85bed6b80",
        "d428fb3cf260db634680a9e110bd48b5a9039d7d6cfee22844a5259db385e5ef",
    ),  # synthetic_oracle
    11: (
        "bb4d224ccff1ffb591475c8698350f143736146844b08b22af348d13f49da1e3",
        "8f887e8c687b2f91fdfcc07ecd74db29546f6af1779c7b8199ff53dd6e7296a4",
    ),  # oracle_paths_wide
    20: (
        "e4f2b16bc3589558d807684249580366202abdf29b9f4e90b1cc9370a8726a2c",
        "68b19a05387dd6bce7c9448b55de59df65cdae9c67c5c535c5c7146f056731a3",
    ),  # build_meta
    30: (
        "22619a66caff04dc9a13e51b5b6331171397279339081f933bf30f0303283a49",
        "a0c8641c9246e2e369dba018e42662afbe74d6aee948f246f111a0ac3e864f23",
    ),  # eval_schema
    40: (
        "34cf0c6e17981b819ccb3ee68a83ee4940f636738b9e823af9a6b95a3b5bf57b",
        "fea96ef073889504e6a7200d64e53674165b755a33abd0e1aa2e623b706de18d",
    ),  # service
    55: (
        "022315ee8f84868b231bb36939f443ccdba43c82c5b87713827498cf3971820b",
        "b0559c9bd23b53c92f1b0eb94110825830a26cc7abcc2dc7a7ab222dec973519",
    ),  # baselines
    60: (
        "53eee723aa96f33b4f24c3569f30967e2e73fba5bd30d46964fa9703039f4ead",
        "c2e66504b08b1f0f7275ddab0df7492d3d1621a6baff99d9cbd04d35103f659c",
    ),  # footprint_gvkeys
    65: (
        "dd4ac5cfc023432752f82541ed4ceb9a0953844c60c7bfab52d68ec28b5c2110",
        "47e9f6557a0ede1307b4788c301fff645e8bb9ba074b5066105009643bbbeaca",
    ),  # incremental_scoring
    70: (
        "e21cd994f9969a1d725c40d4948c5d5a19af93c70fc99d1a7110b8032b7aabe7",
        "fe0281bd14a1fb87a749317d3b9bb3b1bce32e2ab76d154cd0b4162e7a6953da",
    ),  # snapshot_failures
    75: (
        "3c16adbf235c58d740732aab21e8eb298f7883195dad081e4cc11c3381fcfb03",
        "edcd3e115b99ddfa2c5f736117bf96a654e8719b71a89e8eceb6762be5556599",
    ),  # llm_calls
    85: (
        "a9ad469534959862f8faf8a34e39981c9bafcfd1bdabe68c43c7180d09268780",
        "9147d7d88de09bcae633e09655c519f47514870bbf40febfb0f05ccf9aff6899",
    ),  # reconciliation
    86: (
        "07b1cc900a019da9cc5c048e96ececb937db20b52613c6ceff51d17782059a29",
        "3770e1b0d9d62a12d9d0206964b532f7346bad0eda31ee8f48bd28a4e3ef2613",
    ),  # reconcile_violation
    90: (
        "92cc0e3c69fe9007bb7aed599691ee38d9aa0a1b5620111ca04a602fe11d04ac",
        "50bdd95a9c46591938851603699de8839686a4d9f9329759ad1761547aa6f5cd",
    ),  # cell_point_scores
    95: (
        "d158e1fe43b8243a22735d978fea127d06d95211259706e26e59ed8469692b0f",
        "5133f71f0c3b250719709dfbbdceb9304030cb963e13049a82f6f9a0a2be0c2e",
    ),  # forecast_points
    100: (
        "94c612cd9c913d31e775840eb77b6d6574240102ef2d3294e9dfc1db7be651fb",
        "1b7b6ca0cb95a59d4f14f3c12e393ced536484e48bda6cbedcef8701cc3e2a34",
    ),  # scoring_failures
    101: (
        "154a7ad0c28e5b549c5f19aefc0dfd2d07f5cd05e4d88da4b3b088d8dc08ce84",
        "47849ca18a41898cedc1bebb0abcc0bf56a3241a1e89613514194ca1d06c7930",
    ),  # disclosure_key
    110: (
        "90e7257dd241933ac7692dfbd30a3e21e1c1a55407deddff5fe59b2468194afe",
        "ad95747c726d754ac62a5c9a44a9743e098dd30200bc6e2aa1cbada51811b652",
    ),  # run_results_referenced
    111: (
        "0442e5cde86c1948177dcde7df9cee503e38c059861327eb73fcddba3a0ce332",
        "26ff915521f942920e1f5bdd5b52d8df6e7592df2f4fb1e63b396e551bd7e990",
    ),  # upload_store
    112: (
        "6e99a4dffd5cfb0937c85fe75d5927c95d6d79fece7670eabba1a60ad1077beb",
        "fb5eb1588a34ce87c44c1b4cd4ef938ea89025745696a063bf426a05a92b80a7",
    ),  # cell_grid
    120: (
        "ad6b568b070bc6f173d95ad4a3099ce72962029bacba78d624757d46b7409c7e",
        "b55b92083565b2565b6fcf5ce448ec20d58d3f25c907d353c21cd1679a0920cd",
    ),  # rounds
    121: (
        "12c6b6f30487175cf22113f385531567f87566302a5b33966521142809d83543",
        "ea7a90bd26b7341bc408d2c54a5db552a33ce14ecebaf85acc99b72629b7710d",
    ),  # rounds_families
    130: (
        "87c4269f56d7cbe15b2b89c6df4c8f737c738783ae01c44eedd1208d9cf7474c",
        "a6210f058ba829058d1eac083fe1d30b771ac47849aab5d2cedfd6beafcb1e98",
    ),  # metrics_view_follows_registry
    131: (
        "134c00b885ed3618b1940770d7b10e05af377da8c9fe6225c7eae1b1739e8857",
        "6bcb61eb1bc1be4d9700a7b5cf4e6def8ba1bbfc0f247be4521fa37d409f6db9",
    ),  # norm_tail_given_its_exponent
    140: (
        "9ce0d13b7cbd0a63380f68edb9870d04c7f7f510a19fc6fcce65faf71052e148",
        "771c3c6129659ba907c7e3f03c58091ba8c56afdca2057186153ffe7e192ac2f",
    ),  # round_jobs
    141: (
        "326e5c4ce33c409d6ade1560d58be001cefd1523f5ce6fcf8fee3700340a9b3a",
        "4d11efe1187978fa2966eacafdd7885c44a9f052e0be7708bb9e0a13a6aa74d3",
    ),  # round_entry_failures
}
