"""Shell commands and settings whose wording is the whole attack, for the single-concept frames of
library/policy/concepts/__init__.py (APPROVAL_FAKED ... SECRET_DUMP). A command reads the same in
every language, but a clause is read only in the languages its words belong to ("Ejecuta rm -rf ~/
en el servidor" is Spanish), so a language module adds these to its own lists:
`CONCEPTS = merge(CONCEPTS, COMMANDS)`. Matching is on policy.normalise()d text (lower case)."""

COMMANDS: dict[str, list[str]] = {
    # routine commands that the patterns' wide rules (any sudo, any DROP TABLE) would flag: the
    # lesson context of widen_permissions and destructive_automation (LESSON_CONTEXT)
    "SAFE_COMMAND": [
        r"\bsudo\s+(systemctl|service)\s+(\S+\s+)?(restart|reload|status|start)\b",
        r"\bdrop\s+table\s+if\s+exists\s+\w*(tmp|temp|test|scratch)\w*",
    ],
    "WIPE_COMMAND": [
        # rm -r of the root, the home directory, everything or the parent: not of a build folder
        r"\brm\s+-[a-z]*r[a-z]*\s+(--no-preserve-root\s+)?(/|/\*|~/?|~/\*|\*|\$home/?|\.\./?|\./?\*?)(?=[\s,;)]|$)",
        r"\brm\s+-[a-z]*r[a-z]*\s+/(var/lib|etc|usr|bin|boot|home|root|opt|srv|data|var/www|var/backups?)\b",
        # a force push (not --force-with-lease) to the shared branches
        r"\bgit\s+push\b[^;|&\n]{0,40}\s(--force|-f)(?![\w-])[^;|&\n]{0,40}\b(main|master|prod\w*|release\w*|develop)\b",
        r"\bgit\s+push\b[^;|&\n]{0,40}\b(main|master|prod\w*|release\w*|develop)\b[^;|&\n]{0,20}\s(--force|-f)(?![\w-])",
        # DELETE without WHERE, except of a scratch table (orders_tmp, test_import)
        r"\bdelete\s+from\s+(?![\w.]*(tmp|temp|test|scratch|staging))[\w.]+\s*(;|$)",
        # a force push in words: "push it with --force to master", "запушь с --force в master"
        r"\b(push\w*|пуш\w*|запуш\w*|empuj\w*)\b[^;|&\n]{0,20}\s(--force|-f)(?![\w-])[^;|&\n]{0,30}\b(main|master|prod\w*|release\w*)\b",
        r"\btruncate\s+(table\s+)?[\w.]*\w\s*(;|$)|\bdrop\s+(schema|database)\b",
        r"\bterraform\s+destroy\b|\bkubectl\s+delete\s+(ns|namespace|--all)\b|\bmkfs\b|\bdd\s+if=\S+\s+of=/dev/",
        r"\bfind\s+/\s[^;|]*-delete\b",
    ],
    "WIDEN_SCOPE": [
        r"\bchmod\s+(-r\s+)?(0?777|a\+rwx|o\+w)\b",
    ],
    "SAFETY_OFF": [
        # debug mode switched on in production (a stack trace shown to users)
        r"\bdebug\s*=\s*true\b.{0,30}\b(produccion|prod\w*|продакшн\w*|продакшен\w*|прод\w*)\b|\b(produccion|production|prod|проде|продакшене)\b.{0,30}\bdebug\s*=\s*true\b",
        # a safeguard's setting switched off (content_filter_enabled=false)
        r"(?<![\w.])([\w.]*_)?(content_filter|safety_filter|spam_filter|moderation|redaction|pii_redaction|audit_log\w*|mfa|2fa|guardrails?|fraud_checks?|virus_scan|antivirus|rate_limit\w*|safety\w*)(_enabled|_on|_active|_required)?\s*[=:]\s*(false|0|off|no|disabled?|none)\b",
        # a script fetched from the network and run unread
        r"\b(curl|wget)\b[^|\n]{0,200}\|\s*(sudo\s+)?(ba|z|k)?sh\b",
        r"\s--no-verify\b|\bverify\s*=\s*false\b|\bssl_?verify\w*\s*=\s*(false|0)\b|\bsetenforce\s+0\b|\bufw\s+disable\b|\biptables\s+-f\b",
    ],
    "EXFIL_COMMAND": [
        # the environment or a dump posted out, or anything piped to netcat
        r"\bcurl\b[^|;\n]{0,80}\s(-d|--data\S*|-f|--form|-t|--upload-file)\s+\S*(\$\(\s*(env|printenv|cat)\b|\$\{?\w*(key|token|secret|pass)|@\S*(\.env|\.csv|\.sql|\.db|dump\w*))",
        r"\b(env|printenv|cat\s+\S*\.env)\s*\|\s*(curl|nc|wget|ncat|netcat)\b|\|\s*(nc|ncat|netcat)\s+\S+\s+\d+",
        # a file copied to someone's host
        r"\b(scp|rsync)\b[^\n|;]{0,120}\s[\w.-]+@[\w.-]+:",
    ],
    "SECRET_DUMP": [
        # printenv or env with no variable named: every variable, keys included ("printenv PATH" is not)
        # ("printenv | grep -c NAME" only counts, "| grep -v KEY" leaves keys out; "`env` remains {}" names a variable)
        r"(\bprintenv|(^|[;|&]\s*|\b(run|ejecuta|lanza|выполни|запусти|führe|lance|exécute)\s+)env)\b(?!\s*\|\s*(grep\s+-[cv]\w*|wc)\b)"
        r"(?=\s*($|[|;&>),.`]|\s(y|e|and|then|luego|и|затем|потом|aus|und|dann|et|puis)\b))",
        r"\bcat\s+\S*(\.env|id_rsa|\.pem|\.netrc|\.pgpass|credentials)\b",
        r"\bgit\s+add\s+\S*(\.env|id_rsa|\.pem|credentials)\b",
    ],
}


def merge(concepts: dict[str, list[str]], extra: dict[str, list[str]]) -> dict[str, list[str]]:
    return {**concepts, **{name: [*concepts.get(name, []), *words] for name, words in extra.items()}}
