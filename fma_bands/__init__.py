"""fma-bands: clinician adjudication of acceptable-action bands (docs/design.md). The packages
by capability: core, store, evidence, agreement, study, and the command line (cli)."""

import os

# numpy's linear algebra (BLAS) on one thread, in every process that imports fma-bands (the
# command line, the app's server, its workers), set here because the library reads it once, as
# numpy loads it. The agreement statistics' products are small (resamples x vignettes x a few
# values, a thousand times over): threads cost more CPU than they save, and a sum split over
# threads is added in an order that depends on the machine's cores, which made the same
# ratings and seed give intervals differing in their last digits from one machine to another.
for _threads in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_threads] = "1"
