"""The scans that prove that what must be gone is gone: no stored text holds a word window of an erased
text (`manage.py scan_erased`), and no reviewer-visible surface holds a known personal value
(`manage.py scan_personal_data`). Read-only; the erasure itself is library/services/erasure_sweep.py."""
