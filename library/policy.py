"""The policy screen (pure Python, no Django): finds text in a procedure that would turn it into a
vector for poisoning the agent. A version with findings is quarantined: flagged with the reasons,
shown first to reviewers, never approvable as it stands.

Each rule is a category, a reason a reviewer can read, and patterns. Matching is on a normalised
text (lower case, whitespace collapsed, common homoglyph tricks undone) so that "I g n o r e" or
zero-width characters do not slip through. The rules cover English and the same instructions in
Chinese, French, Spanish and German (an attacker writes in whatever language the agent reads).

Every screen result records POLICY_VERSION (bump it whenever a rule changes), so a reviewer can
tell which rules judged a version; `trust_level` says how far the text's origin can be trusted
(text from tool output or web content is the least trusted) and is shown to reviewers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

# Bump on every change to _RULES or to normalise(): stored screen results name the version that
# produced them.
POLICY_VERSION = "2026.11.2"


@dataclass(frozen=True)
class Finding:
    category: str
    reason: str
    field: str
    excerpt: str

    def to_dict(self) -> dict[str, str]:
        return {"category": self.category, "reason": self.reason, "field": self.field, "excerpt": self.excerpt}


_RULES: list[tuple[str, str, list[str]]] = [
    (
        "skip_approval",
        "tells the agent to skip or bypass an approval",
        [
            r"\b(skip|bypass|avoid|omit|circumvent|don'?t (need|bother) (to )?(get|request|create|wait for))\b[^.]{0,40}\bapprov",
            r"\bwithout (an? |any )?(manager'?s? )?approv",
            r"\bno (need for|approval (is )?(needed|required))",
            r"\bself[- ]approv",
            r"\bapprove\b[^.]{0,40}\b(yourself|on your own|by yourself)\b",
            r"\bwithout (waiting for |asking for |getting )?(an? |any |the )?((line )?manager'?s?|supervisor'?s?|human|team lead'?s?)? ?(sign[- ]?off|approval|review|confirmation|authori[sz]ation|ok)\b",
            r"\b(don'?t|do not|no need to|never) wait (for|on) (an? |the )?((line )?manager|supervisor|sign[- ]?off|approval|review)",
            # Chinese, French, Spanish, German
            r"(忽略|跳过|绕过|无需|不需要|不用|免除)[^。]{0,10}(审批|批准|审核|核准)",
            r"\b(ignor(er|ez)|saut(er|ez)|contourn(er|ez)|sans)\b[^.]{0,30}\b(approbation|validation|autorisation|accord du (manager|responsable))",
            r"\b(ignora[r]?|omit(ir|e)|salt(ar|a)|sin)\b[^.]{0,30}\b(aprobaci[oó]n|autorizaci[oó]n|validaci[oó]n)",
            r"\b(ohne|ignorier(e|en)?|überspring(e|en)?)\b[^.]{0,30}\b(genehmigung|freigabe|zustimmung)",
        ],
    ),
    (
        "skip_identity_check",
        "tells the agent to skip identity or authentication checks",
        [
            r"\b(skip|bypass|avoid|omit|ignore)\b[^.]{0,40}\b(identity|verification|verify|authenticat|kyc|id check)",
            r"\bwithout (verifying|checking|authenticating)\b[^.]{0,30}\b(identity|user|customer|caller)",
            r"\bno need to (verify|authenticate|check (the )?identity)",
            r"(忽略|跳过|绕过|无需|不需要|不用)[^。]{0,10}(验证|身份|核实|认证)",
            r"\b(ignor(er|ez)|saut(er|ez)|contourn(er|ez)|sans)\b[^.]{0,30}\b(v[ée]rification|identit[ée]|authentification)",
            r"\b(ignora[r]?|omit(ir|e)|salt(ar|a)|sin)\b[^.]{0,30}\b(verificaci[oó]n|identidad|autenticaci[oó]n)",
            r"\b(ohne|ignorier(e|en)?|überspring(e|en)?)\b[^.]{0,30}\b(überprüfung|prüfung|verifizierung|identität|authentifizierung)",
        ],
    ),
    (
        "widen_permissions",
        "tells the agent to widen permissions or escalate its own privileges",
        [
            r"\b(grant|give|escalate|elevate|widen|raise)\b[^.]{0,40}\b(admin|root|superuser|privilege|permission|access|role)",
            r"\b(disable|turn off|remove)\b[^.]{0,30}\b(limit|rate limit|guard|restriction|check)s?\b",
            r"\bsudo\b|\bchmod\s+777\b",
        ],
    ),
    (
        "ignore_rules",
        "tells the agent to ignore its rules or instructions",
        [
            r"\b(ignore|disregard|forget|override)\b[^.]{0,40}\b(previous|prior|above|earlier|all|your|the|system)\b[^.]{0,30}\b(instruction|rule|polic|guideline|prompt)",
            r"\bdo not follow\b[^.]{0,30}\b(instruction|rule|polic)",
            r"\byou are now\b|\bnew instructions?:",
            r"(以后|今后|从现在起|从现在开始)?[^。]{0,6}(忽略|无视|忘记)[^。]{0,10}(指令|规则|说明|提示|政策|之前)",
            r"\b(ignor(er|ez)|oubli(er|ez))\b[^.]{0,30}\b(instructions?|r[èe]gles?|consignes?|politique)",
            r"\b(ignora[r]?|olvida[r]?)\b[^.]{0,30}\b(instrucciones|reglas|pol[ií]tica)",
            r"\b(ignorier(e|en)?|vergiss|vergessen)\b[^.]{0,30}\b(anweisungen|regeln|richtlinien)",
        ],
    ),
    (
        "destructive_automation",
        "tells the agent to delete or disable things automatically, without a person deciding",
        [
            r"\b(automatically|auto-?|silently)\s*(delete|remove|purge|wipe|erase|disable|deactivate|drop|revoke|suspend)\b",
            r"\b(delete|remove|purge|wipe|erase|disable|deactivate|drop|revoke|suspend)\b[^.]{0,50}\b(automatically|without (asking|confirm\w*|review\w*|a person|a human|approval)|no questions asked)",
            r"\brm\s+-rf\b|\bdrop\s+(table|database)\b|\btruncate\s+table\b",
            r"(自动|直接)[^。]{0,6}(删除|禁用|清除|停用|注销)",
            r"\b(supprim(er|ez)|d[ée]sactiv(er|ez)|effac(er|ez))\b[^.]{0,30}\bautomatiquement\b|\bautomatiquement\b[^.]{0,20}\b(supprim|d[ée]sactiv|effac)",
            r"\b(elimina[r]?|borra[r]?|desactiva[r]?)\b[^.]{0,30}\bautom[aá]ticamente\b",
            r"\bautomatisch\b[^.]{0,30}\b(löschen|lösche|deaktivieren|deaktiviere|entfernen)",
        ],
    ),
    (
        "override_safety",
        "tells the agent to override safety policy",
        [
            r"\b(override|bypass|disable|ignore|turn off)\b[^.]{0,40}\b(safety|content|security|guardrail|filter|moderation)",
            r"\bjailbreak|\bdeveloper mode\b|\bdan mode\b",
        ],
    ),
    (
        "tool_output_instruction",
        "carries instructions that came from untrusted tool output",
        [
            r"\b(tool|function|api|search|web) (output|result|response)s? (says?|instructs?|tells?)\b",
            r"<\s*/?\s*(system|instructions?|tool_output|im_start|im_end)\s*>",
            r"\[\s*(system|inst)\s*\]|<<\s*sys\s*>>",
            r"\b(assistant|system)\s*:\s*(ignore|you must|always)",
            r"\bfollow the instructions (in|from) the (tool|function|api|result|output|document|page|email)",
        ],
    ),
]

_COMPILED = [(cat, reason, [re.compile(p, re.IGNORECASE) for p in patterns]) for cat, reason, patterns in _RULES]
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    # "i g n o r e" → "ignore": collapse runs of single letters separated by single spaces
    text = re.sub(r"\b(?:[A-Za-z] ){3,}[A-Za-z]\b", lambda m: m.group(0).replace(" ", ""), text)
    return re.sub(r"\s+", " ", text).strip().lower()


def screen_text(text: str, field: str) -> list[Finding]:
    normalised = normalise(text)
    findings: list[Finding] = []
    for category, reason, patterns in _COMPILED:
        for pattern in patterns:
            match = pattern.search(normalised)
            if match:
                start = max(0, match.start() - 20)
                findings.append(Finding(category, reason, field, normalised[start : match.end() + 20]))
                break
    return findings


TRUST_LEVELS = ("low", "medium", "high")
# provenance["textOrigin"] values that make text untrusted: it was read from a tool's output or a web page
UNTRUSTED_ORIGINS = {"tool_output", "web", "web_content", "document", "email"}


def trust_level(*, source: str, provenance: dict[str, Any] | None, findings: Iterable[Finding] = ()) -> tuple[str, str]:
    """(level, why) for a version's text: "high" when a person wrote it (by hand, an edit), "medium"
    when a machine assembled it from our own records (mined, captured, imported), "low" when the
    text came from tool output or web content (provenance textOrigin) or carries instructions that
    look like they came from there."""
    origin = str((provenance or {}).get("textOrigin", "") or "")
    if origin in UNTRUSTED_ORIGINS:
        return "low", f"the text came from {origin.replace('_', ' ')}"
    if any(f.category == "tool_output_instruction" for f in findings):
        return "low", "the text carries instructions that look like tool output"
    if source in {"manual", "revision"}:
        return "high", "written or edited by a person"
    return "medium", f"assembled by a machine ({source})"


def screen_record(*, source: str, provenance: dict[str, Any] | None, findings: list[Finding]) -> dict[str, Any]:
    """What is stored with a version about its screen (in provenance["screen"]): the policy version
    that produced the result, the number of findings, and the trust level with its reason."""
    level, why = trust_level(source=source, provenance=provenance, findings=findings)
    return {"policyVersion": POLICY_VERSION, "findings": len(findings), "trust": level, "trustReason": why}


def screen(*, applies_when: str, steps: Iterable[str], forbidden_actions: Iterable[str] = ()) -> list[Finding]:
    """Screens the fields an agent would read as instructions. forbiddenActions are screened for
    injected instructions only: "do not skip approval" is the lesson, not the attack."""
    findings = screen_text(applies_when, "appliesWhen")
    for index, step in enumerate(steps, start=1):
        findings.extend(screen_text(step, f"steps[{index}]"))
    for index, action in enumerate(forbidden_actions, start=1):
        findings.extend(f for f in screen_text(action, f"forbiddenActions[{index}]") if f.category == "tool_output_instruction")
    return findings
