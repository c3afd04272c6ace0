"""Redaction of personal data and secrets (pure Python, no Django).

Everything a reviewer can open — session excerpts, candidate evidence and steps, eval cases made
from sessions — passes through a `Redactor` first. It works by structure, by shape and by echo
(docs/redaction.md has the rules, the measurements behind them and the placeholders):

1. Structure. Tool-call arguments and tool results name their personal fields. A value under a
   personal key at any depth becomes a placeholder named after the key: name parts (`first_name`,
   `given`, `family`, a `name` beside personal fields, FHIR `name: [{given, family, text}]`) →
   `{{person_name}}`; birth dates (`dob`, `birthdate`, `birthDate`) → `{{birth_date}}`; id keys
   (`*_id`, `id` beside personal fields, `mrn`, `member`, `patient`, `reservation(s)`, `order(s)`,
   `confirmation`) → `{{reservation_id}}`, `{{patient_id}}`, …; e-mail, phone, address lines,
   payment ids, passports and licences likewise. Query strings of HTTP-style calls
   (`Patient?name=…&birthdate=…`) are read the same way.
2. Echo. Every value seen once in a personal position — by key, in a query string, or after a cue
   in the text ("born 1970-01-01", "my name is …") — becomes a known value of the session and is
   replaced wherever it occurs in that session, free text included: "Thank you, Mia" goes because
   `first_name: "Mia"` was in a tool result; a DOB named in the task goes from the arguments too.
3. Shape. Recognizers modelled on Microsoft Presidio's pattern recognizers, extended for what
   agents' sessions carry: secrets, e-mail, Luhn-checked cards, IBANs, SSNs, IP addresses, phone
   numbers (international, and national with a trunk 0 such as "0151 23456789"), street addresses
   (English "221B Baker Street" and German "Hauptstraße 5, 10115 Berlin"), payment-method ids,
   user handles, id-shaped tokens (letters mixed with digits — `4WQ150`, `S6534835`, `#W1234567`,
   `ORD-12345`, `C-998877` — and all-caps codes of 5–10 letters after an id word such as
   "reservation"), FHIR references (`Patient/123`), passport and licence numbers after their cue, and
   names after a cue ("my name is …", "Customer Anna Schmidt", "John Smith called").
4. Per-agent patterns (`Agent.redaction_patterns`) for ids that no rule can know.

Every match becomes a typed placeholder; placeholders are never matched again, so redacting twice
changes nothing.

One module per part: keys.py (1, structure), echo.py (2, a session's known values), shapes.py (3,
the built-in recognizers), recognizers.py (what a recognizer is, how a chain of them runs, 4: the
agent's patterns), redactor.py (the `Redactor` of one session that applies them all, and
`redactor_for_session`). Import each name from the module that defines it.
"""
