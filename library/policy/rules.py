"""The policy screen (pure Python, no Django): finds text in a procedure that would turn it into a
vector for poisoning the agent. A version with findings is quarantined: flagged with the reasons,
shown first to reviewers, never approvable as it stands.

Two layers, over a normalised text (lower case, whitespace collapsed, common homoglyph tricks
undone, so that "I g n o r e" or zero-width characters do not slip through):

- the patterns below: each rule is a category, a reason a reviewer can read, and patterns in
  English, German, French, Spanish, Chinese, Japanese and Russian, for wordings known to be attacks;
- the meaning layer (library/policy/concepts): per language, lexicons of actions and targets and
  the frames that combine them in a clause ("switch the guardrails off", "put the content filter in
  permissive mode"), with negation and benign context, for paraphrases nobody wrote a pattern for.
  It adds two categories the patterns do not have: sending data out of the company and revealing
  secrets.

How well they do is measured on a labelled set of harmful paraphrases and benign near-misses
(library/policy/data/screen_set.jsonl, `manage.py screen_eval`, docs/safety.md), including a set
written blind by another engineer. Neither layer understands text: a reviewer still reads every
candidate.

Every screen result records POLICY_VERSION (bump it whenever a rule changes), so a reviewer can
tell which rules judged a version; `trust_level` says how far the text's origin can be trusted
(text from tool output or web content is the least trusted) and is shown to reviewers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from . import concepts as policy_concepts
from .literals import Literals

# Bump on every change to _RULES, to normalise() or to library/policy/concepts: stored screen
# results name the version that produced them.
POLICY_VERSION = "2026.12.4"


@dataclass(frozen=True)
class Finding:
    category: str
    reason: str
    field: str
    excerpt: str

    def to_dict(self) -> dict[str, str]:
        return {"category": self.category, "reason": self.reason, "field": self.field, "excerpt": self.excerpt}


# Each category's patterns, by language: English first, then German, French, Spanish, Chinese,
# Japanese and Russian. Matching is on normalise()d text (lower case). A finding of a category in
# NEGATABLE is dropped when the sentence negates it ("do not grant admin access" is the lesson).
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
            r"\beven (if|though|when)\b[^.]{0,40}\b(not|hasn'?t|haven'?t|no|yet to)\b[^.]{0,30}\b(sign(ed)?[- ]?off|approv|authori[sz])",
            r"\b(no (reason|need)|not necessary|unnecessary|pointless)\b[^.]{0,15}\bto wait\b[^.]{0,30}\b(approv|sign[- ]?off|authori[sz])",
            # German
            r"\b(ohne|ignorier(e|en)?|überspring(e|en)?)\b[^.]{0,30}\b(genehmigung|freigabe|zustimmung)",
            r"\bauch wenn\b[^.]{0,40}\b(freigabe|genehmigung|zustimmung|einverständnis)\b[^.]{0,30}\b(fehlt|fehlen|aussteht|nicht)",
            r"\b(warte|wartet|warten sie) nicht auf\b[^.]{0,30}\b(genehmigung|freigabe|zustimmung|manager|vorgesetzt)",
            # French
            r"\b(ignor(er|ez)|saut(er|ez)|contourn(er|ez)|sans)\b[^.]{0,30}\b(approbation|validation|autorisation|feu vert|aval|accord du (manager|responsable))",
            r"\bm[êe]me (si|sans)\b[^.]{0,40}\b(feu vert|accord|approbation|validation|autorisation|aval)",
            r"\b(inutile|pas besoin|pas la peine|nul besoin)\b[^.]{0,15}\battendre\b[^.]{0,30}\b(validation|approbation|accord|autorisation|feu vert|aval|responsable|manager)",
            # Spanish
            r"\b(ignora[r]?|omit(ir|e)|salt(ar|a)|sin)\b[^.]{0,30}\b(aprobaci[oó]n|autorizaci[oó]n|validaci[oó]n|visto bueno)",
            r"\baunque\b[^.]{0,40}\b(no|todav[ií]a no|a[uú]n no)\b[^.]{0,30}\b(autoriz|aprob|firm|valid)",
            r"\b(no hace falta|no es necesario|no necesitas|sin necesidad de)\b[^.]{0,15}\besperar\b[^.]{0,30}\b(aprobaci|autorizaci|validaci|visto bueno|supervisor|gerente)",
            # Chinese
            r"(忽略|跳过|绕过|无需|不需要|不用|免除)[^。]{0,10}(审批|批准|审核|核准)",
            r"(即使|即便|就算|哪怕)[^。]{0,15}(没有|未|还没|尚未)[^。]{0,8}(签字|批准|审批|同意|授权|签批)",
            r"(不必|不用|无需|不需要|用不着)[^。]{0,4}等[^。]{0,10}(批准|审批|同意|授权|签字)",
            # Japanese
            r"(承認|許可|決裁|サイン)[^。]{0,6}(がまだ|が無く|がなく|なしで|無しで|を待たず|を得ずに|を省略|をスキップ)",
            r"(承認|許可|決裁)[^。]{0,4}を?待つ必要は(ありません|ない)",
            # Russian
            r"\bдаже если\b[^.]{0,40}\bне (согласова|одобри|утверди|подписа|разреши)",
            r"\b(не нужно|не надо|незачем|нет нужды|не обязательно)\b[^.]{0,10}\bждать\b[^.]{0,30}\b(одобрени|согласовани|разрешени|подтверждени|руководител|менеджер)",
            r"\bбез (одобрения|согласования|разрешения|подтверждения) (менеджера|руководителя)",
        ],
    ),
    (
        "skip_identity_check",
        "tells the agent to skip identity or authentication checks",
        [
            r"\b(skip|bypass|avoid|omit|ignore)\b[^.]{0,40}\b(identity|verification|verify|authenticat|kyc|id check)",
            r"\bwithout (verifying|checking|authenticating)\b[^.]{0,30}\b(identity|user|customer|caller)",
            r"\bno need to (verify|authenticate|check (the )?identity)",
            r"\b(don'?t|do not|no need to|never)\b (bother )?(ask|request|check|verify|confirm)\w*\b[^.]{0,40}\b(who (they|he|she) (are|is)|identity|id\b|date of birth|verification code|one-time code)",
            r"\btreat (any|every|anyone|whoever)\b[^.]{0,60}\bas (the )?(account )?(owner|holder|verified)",
            # German
            r"\b(ohne|ignorier(e|en)?|überspring(e|en)?)\b[^.]{0,30}\b(überprüfung|prüfung|verifizierung|identität|authentifizierung)",
            r"\b(frag|frage|fragen sie|prüfe|prüfen sie|verlange|verlangen sie)\b[^.]{0,30}\bnicht\b[^.]{0,30}\b(identität|ausweis|geburtsdatum|legitimation)",
            # French
            r"\b(ignor(er|ez|e)|saut(er|ez|e)|contourn(er|ez|e)|(?<!mot de )pass(er|ez|e)|omet(s|tez)?|sans)\b[^.]{0,30}\b(v[ée]rification|identit[ée]|authentification)",
            r"\bne (demande|v[ée]rifie|contr[ôo]le|exige)\w* pas\b[^.]{0,40}\b(identit[ée]|pi[èe]ce d'identit|date de naissance|code)",
            # Spanish
            r"\b(ignora[r]?|omit(ir|e)|salt(ar|a|ate)|s[aá]ltate|evita|sin)\b[^.]{0,30}\b(verificaci[oó]n|identidad|autenticaci[oó]n|comprobaci[oó]n)",
            r"\bno (le |les )?(pidas|pida|verifiques|compruebes|solicites)\b[^.]{0,40}\b(qui[ée]n es|identidad|documento|fecha de nacimiento|c[oó]digo)",
            # Chinese
            r"(忽略|跳过|绕过|省略|略过|无需|不需要|不用|不必)[^。]{0,10}(验证|身份|核实|认证)",
            # Japanese
            r"(本人確認|身元確認|認証)[^。]{0,6}(を求めず|をせず|せずに|しないで|を省略|を省き|をスキップ|は不要)",
            # Russian
            r"\bне (проси|спрашивай|проверяй|требуй|уточняй)\b[^.]{0,40}\b(личност|документ|дату рождения|код)",
            r"\b(пропусти|пропускай|обойди|игнорируй|не проводи)\b[^.]{0,20}\b(проверк|верификаци|идентификаци)",
        ],
    ),
    (
        "widen_permissions",
        "tells the agent to widen permissions or escalate its own privileges",
        [
            r"\b(grant|give|escalate|elevate|widen|raise)\b[^.]{0,40}\b(admin|root|superuser|privilege|permission|(?<!read )(?<!view )(?<!read-only )access|role)(?![^.]{0,60}\b(access request|listed in|once approved|after approval)\b)",
            r"\badd\b[^.]{0,30}\bto the (admin|administrator|owner|root|sudo)s?\b",
            r"\b(disable|turn off|remove)\b[^.]{0,30}\b(limit|rate limit|guard|restriction|check)s?\b",
            # sudo (a verify command or a step run as root), except a system package installed
            r"\bsudo\b(?!\s+(-\w+\s+)*(apt|apt-get|dnf|yum|apk|zypper)\s+(-\w+\s+)*(install|update)\b)|\bchmod\s+(-\w+\s+)*0?777\b",
            # German
            r"\b(gib|gebe|erteile|vergib|verleihe|gewähre|füge)\b[^.]{0,40}\b(admin\w*|administrator\w*|root|superuser|vollzugriff|alle rechte)",
            # French
            r"\b(accorde|donne|attribue|octroie|ajoute)\w*\b[^.]{0,40}\b(admin\w*|administrateur\w*|root|super-?utilisateur|tous les droits)",
            # Spanish
            r"\b(conc[ée]de\w*|da(le|les|me|nos)?|otorga\w*|asigna\w*|agrega\w*|a[ñn]ade\w*)\b[^.]{0,40}\b(administrador\w*|admin|root|superusuario|todos los permisos)",
            # Chinese
            r"(授予|赋予|给予|开通|提升|给)[^。]{0,12}(管理员|超级用户|root|最高)权限",
            r"(加入|添加到|加到)[^。]{0,6}管理员",
            # Japanese
            r"(管理者|特権|root|ルート|スーパーユーザー)[^。]{0,4}(権限)?を(付与|与え|追加)",
            r"管理者(グループ|ロール)に追加",
            # Russian
            r"\b(выдай|дай|предоставь|назначь|добавь)\w*\b[^.]{0,40}\b(права администратора|администратор\w*|админ\w*|root|суперпользовател\w*|полные права)",
        ],
    ),
    (
        "ignore_rules",
        "tells the agent to ignore its rules or instructions",
        [
            r"\b(ignore|disregard|forget|override)\b[^.]{0,40}\b(previous|prior|above|earlier|all|your|the|system)\b[^.]{0,30}\b(instruction|rule|polic|guideline|prompt)",
            r"\bdo not follow\b[^.]{0,30}\b(instruction|rule|polic)",
            r"\byou are now\b|\bnew instructions?:",
            r"\b(set aside|put aside|discard|abandon|forget)\b[^.]{0,30}\b(everything|anything|all)\b[^.]{0,20}\b(told|instruct|said|rules?|guidelines?)",
            r"\b(polic(y|ies)|rules?|guidelines?)\b[^.]{0,20}\b(does not|doesn'?t|do not|don'?t|no longer) apply\b",
            r"\bdo (whatever|anything|everything) (they|he|she|the customer|the user|the caller) (asks?|wants?|says?|demands?)",
            # German
            r"\b(ignorier(e|en)?|vergiss|vergessen)\b[^.]{0,30}\b(anweisungen|regeln|richtlinien)",
            r"(richtlinie|regel|vorschrift)\w*[^.;]{0,40}\bgelten\b[^.;]{0,30}\bnicht\b",
            r"\btu,? (was|alles,? was) (er|sie|der kunde) (verlangt|will|sagt|fordert)",
            # French
            r"\b(ignor(er|ez|e)|oubli(er|ez|e))\b[^.]{0,30}\b(instructions?|r[èe]gles?|consignes?|politique)",
            r"\b(politique|r[èe]gle|consigne)s?\b[^.;]{0,40}\bne s'appliquen?t? pas\b",
            r"\bfais (tout )?ce qu'(il|elle|ils|on) (demande|veut|exige)",
            # Spanish
            r"\b(ignora[r]?|olvida[r]?)\b[^.]{0,30}\b(instrucciones|reglas|pol[ií]tica)",
            r"\b(pol[ií]tica|norma|regla)s?\b[^.;]{0,40}\bno se aplica",
            r"\bhaz (todo )?lo que (te )?(pida|diga|quiera|exija)\b(?![^.]{0,40}(p[aá]gina|resultado|salida|documento|herramienta))",
            # Chinese
            r"(以后|今后|从现在起|从现在开始)?[^。]{0,6}(忽略|无视|忘记|忘掉|抛开|不理会)[^。]{0,10}(指令|指示|规则|说明|提示|政策|之前)",
            r"(政策|规定|规则)[^。]{0,12}不适用",
            r"要求什么就(做|办)什么",
            # Japanese
            r"(指示|ルール|規則|命令|指令|ポリシー)[^。]{0,8}(を?忘れ|を?無視|を?無効に)",
            r"(ポリシー|規則|ルール)[^。]{0,6}(は|が)?適用されません",
            r"言われた(通り|とおり)に",
            # Russian
            r"\b(забудь|игнорируй|отбрось|не обращай внимания на)\b[^.]{0,30}\b(инструкци|правил|указани|политик)",
            r"\b(правила|политика|регламент)\w*\b[^.;]{0,40}\bне (распространя|применя|действу)",
            r"\bделай (всё|все|что угодно),? что (он|она|они|клиент) (просит|хочет|скажет|требует)",
        ],
    ),
    (
        "destructive_automation",
        "tells the agent to delete or disable things automatically, without a person deciding",
        [
            r"\b(automatically|auto-?|silently)\s*(delete|remove|purge|wipe|erase|disable|deactivate|drop|revoke|suspend)\b",
            r"\b(delete|remove|purge|wipe|erase|disable|deactivate|drop|revoke|suspend)\b[^.]{0,50}\b(automatically|silently|without (asking|checking|consulting|telling|confirm\w*|review\w*|a person|a human|approval|anyone)|no questions asked)",
            # rm -rf of the root, the home directory or everything, not of a build folder
            r"\brm\s+-[a-z]*r[a-z]*f?\s+(/(\s|$|\*)|~/?(\s|$)|\*|\$home\b|--no-preserve-root)",
            # not of a scratch table ("DROP TABLE IF EXISTS tmp_import")
            r"\b(drop\s+(table|database)|truncate\s+table)\b(?!\s+(if\s+exists\s+)?[\w.\"`]*(tmp|temp|scratch|staging_import|test)\w*)",
            # German
            r"\bautomatisch\b[^.]{0,30}\b(löschen|lösche|deaktivieren|deaktiviere|entfernen)",
            r"\b(lösch\w*|entfern\w*|deaktivier\w*|tilg\w*)\b[^.]{0,40}\b(automatisch|ohne (jemanden|jemand|nachzufragen|rückfrage|zu fragen)|still und leise|heimlich|stillschweigend)",
            # French
            r"\b(supprim|d[ée]sactiv|effac|purg)\w*\b[^.]{0,40}\b(automatiquement|sans (demander|consulter|pr[ée]venir|v[ée]rifier)|discr[èe]tement|en silence)",
            r"\b(automatiquement|discr[èe]tement)\b[^.]{0,20}\b(supprim|d[ée]sactiv|effac)",
            # Spanish
            r"\b(elimina|borra|desactiva|suprime|purga)\w*\b[^.]{0,40}\b(autom[aá]ticamente|en silencio|silenciosamente|a escondidas|sin (consultar|preguntar|avisar|revisar))",
            # Chinese
            r"(自动|直接|悄悄|偷偷|默默|静默)[^。]{0,6}(删除|禁用|清除|清空|停用|注销)",
            # Japanese
            r"(黙って|こっそり|勝手に|確認せずに|無断で)[^。]{0,20}(削除|消去|無効化|停止|抹消)",
            # Russian
            r"\b(автоматически|тихо|молча|незаметно)\b[^.]{0,30}\b(удали|сотри|отключи|деактивируй|очисти|заблокируй)",
            r"\b(удали|сотри|отключи|деактивируй|очисти)\w*\b[^.]{0,40}\b(автоматически|никого не спрашивая|без (подтверждени|вопросов|согласовани)|тихо|молча)",
        ],
    ),
    (
        "override_safety",
        "tells the agent to override safety policy",
        [
            r"\b(override|bypass|disable|ignore|turn off|switch off|deactivate)\b[^.]{0,40}\b(safety|content|security|guardrail|filter|moderation)",
            r"\bjailbreak|\bdeveloper mode\b|\bdan mode\b",
            # German
            r"\b(deaktivier\w*|umgeh\w*|ignorier\w*|abschalt\w*)\b[^.]{0,40}(sicherheit(?!s?(team|abteilung|beauftragt))|filter|moderation|schutz)",
            r"\bschalte?\b[^.]{0,40}(sicherheit|filter|moderation|schutz)\w*[^.]{0,30}\baus\b",
            # French
            r"\b(d[ée]sactiv|coup|contourn|ignor)\w*\b[^.]{0,40}\b(filtre|(?<!quipe )(?<!quipe de )(?<!quipe de la )(?<!service )s[ée]curit[ée]|mod[ée]ration|garde-fou|protection)",
            # Spanish
            r"\b(desactiva|apaga|quita|evita|ignora|salta)\w*\b[^.]{0,40}\b(filtro|seguridad|moderaci[oó]n|protecci[oó]n|salvaguarda)",
            # Chinese
            r"(关闭|关掉|禁用|停用|绕过|跳过|忽略)[^。]{0,8}(安全|过滤|审核|防护|护栏)",
            # Japanese
            r"(安全|セーフティ|フィルター|モデレーション|検閲|ガードレール)[^。]{0,10}(を無効|をオフ|を解除|を切|を外|を回避|をバイパス)",
            # Russian
            r"\b(отключи|выключи|обойди|игнорируй|деактивируй)\w*\b[^.]{0,30}\b(фильтр|безопасност|модераци|защит)",
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
            r"\b(result|output|response|page|document|email|message)s?\b[^.]{0,40}\b(contains?|has|have|includes?|gives?)\b[^.]{0,20}\b(instructions?|commands?|directions?)\b[^.]{0,30}\b(carry|follow|obey|execute|do|perform|run)",
            r"\b(do|follow|obey|execute) (what|whatever|everything)\b[^.]{0,40}\b(page|result|output|document|email|tool|site)\b[^.]{0,30}\b(tells?|says?|instructs?|asks?)",
            # German
            r"(ergebnis|ausgabe|antwort|seite|dokument|e-mail)\w*[^.]{0,40}\b(anweisung|befehl)\w*[^.]{0,40}\b(führe|befolge|folge|tu)",
            r"\b(tu|tue|mach|mache|befolge)\b,? (was|alles,? was)\b[^.]{0,40}(seite|ergebnis|ausgabe|dokument|werkzeug|tool)\w*[^.]{0,30}\b(sagt|verlangt|anweist|vorgibt)",
            # French
            r"(r[ée]sultat|sortie|r[ée]ponse|page|document|e-mail|courriel)[^.]{0,40}\b(instructions?|consignes?|commandes?)\b[^.]{0,40}\b(ex[ée]cute|suis|applique|ob[ée]is|fais)",
            r"\b(fais|suis|ex[ée]cute|applique)\b (tout )?ce que\b[^.]{0,40}\b(page|r[ée]sultat|sortie|document|outil|site)\b[^.]{0,30}\b(dit|demande|indique|ordonne)",
            # Spanish
            r"(resultado|salida|respuesta|p[aá]gina|documento|correo)[^.]{0,40}\binstrucciones?\b[^.]{0,40}\b(c[uú]mpl|sigu|ejecut|obedec|haz)",
            r"\b(haz|sigue|ejecuta|obedece)\b (todo )?lo que\b[^.]{0,50}\b(p[aá]gina|resultado|salida|documento|herramienta|sitio)",
            # Chinese
            r"(结果|输出|返回|网页|页面|文档|邮件)[^。]{0,10}(指令|指示|命令)[^。]{0,12}(?<!不要)(?<!别)(?<!不)(?<!勿)(照做|执行|遵循|服从|按.{0,4}做)",
            r"(按照|遵照|照着|听从)[^。]{0,10}(网页|页面|结果|输出|文档|工具)[^。]{0,15}(告诉|说|要求|指示)",
            # Japanese
            r"(結果|出力|ページ|文書|メール)[^。]{0,10}(指示|命令)[^。]{0,20}(その通り|従って|実行)",
            r"(ページ|結果|出力|文書|ツール)[^。]{0,6}が[^。]{0,10}(指示|命令|言う|求める)[^。]{0,8}(こと|通り)を?(実行|し|行)",
            # Russian
            r"\b(результат|вывод|ответ|страниц|документ|письм)\w*\b[^.]{0,30}\b(инструкци|указани|команд)\w*\b[^.]{0,30}\b(выполни|следуй|исполни|сделай)",
            r"\b(делай|сделай|выполняй|выполни|следуй)\b[^.]{0,10}\bчто\b[^.]{0,40}\b(страниц|результат|вывод|документ|инструмент|сайт)\w*\b[^.]{0,20}\b(скажет|говорит|велит|укажет|прикажет)",
        ],
    ),
]

# Categories whose wording is also the lesson when negated: "do not grant admin access", "never
# disable the safety filter", "keine Administratorrechte vergeben". (Skipping an approval is harmful
# in the negative too: "don't wait for the approval".)
NEGATABLE = {"widen_permissions", "destructive_automation", "override_safety"}
# Categories whose patterns start with the skip verb: "ne saute pas la vérification" negates it
# (policy_concepts.negated_skip), "don't wait for the approval" does not (its negation is the attack).
SKIPPING = {"skip_approval", "skip_identity_check"}
_NEGATION = re.compile(
    r"\b(do not|don'?t|never|must not|should not|shouldn'?t|cannot|can'?t|not|nicht|keine?[nmrs]?|niemals|nie|jamais|aucun\w*"
    r"|nunca|jam[aá]s|no|не|никогда|нельзя)\b|\bn'|\bne\b|(不要|别|勿|禁止|不得|不能|不可)"
)
_NEGATION_AFTER = re.compile(r"^[^。]{0,4}(しない|せず|ないで|禁止|いけません|(て|で)ほしい)")

REASONS = {**{category: reason for category, reason, _ in _RULES}, **policy_concepts.REASONS}
CATEGORIES = tuple(REASONS)
_COMPILED = [(cat, reason, [re.compile(p, re.IGNORECASE) for p in patterns]) for cat, reason, patterns in _RULES]
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


@cache
def _literals() -> Literals:
    """The patterns' required strings (policy.literals), read at the first screen in a process."""
    literals = Literals()
    for category, _reason, patterns in _COMPILED:
        for index, pattern in enumerate(patterns):
            literals.add((category, index), pattern.pattern, pattern.flags)
    return literals


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    # "i g n o r e" → "ignore": collapse runs of single letters separated by single spaces
    text = re.sub(r"\b(?:[A-Za-z] ){3,}[A-Za-z]\b", lambda m: m.group(0).replace(" ", ""), text)
    return re.sub(r"\s+", " ", text).strip().lower()


def _negated(text: str, match: re.Match) -> bool:
    """Whether the sentence negates what `match` found: a negation in the 25 characters before it or
    the first 20 of it (German and French put it after the verb), or a Japanese negation after it."""
    window = text[max(0, match.start() - 25) : match.start() + 20].replace("no questions asked", "")
    return bool(_NEGATION.search(window) or _NEGATION_AFTER.search(text[match.end() :]))


def screen_text(text: str, field: str) -> list[Finding]:
    """The findings in one field: the patterns' (a category at most once), then the meaning layer's
    (library/policy/concepts) for the categories the patterns did not find."""
    return [Finding(category, reason, field, excerpt) for category, reason, excerpt in _text_findings(text)]


# Cached: a function of the text alone, and a mining run's candidates share many of their lines (the
# 17 candidates of the 140 other-repository sessions: 273 texts, 195 different; 13 ms of CPU each).
@lru_cache(maxsize=4096)
def _text_findings(text: str) -> tuple[tuple[str, str, str], ...]:
    """(category, reason, excerpt) of each finding in `text`, as screen_text gives them."""
    normalised = normalise(text)
    literals = _literals()
    found = literals.found(normalised)
    findings: list[tuple[str, str, str]] = []
    for category, reason, patterns in _COMPILED:
        for index, pattern in enumerate(patterns):
            if not literals.may_match((category, index), found):
                continue  # the text holds none of the strings every match of the pattern holds
            match = next(
                (
                    m
                    for m in pattern.finditer(normalised)
                    if (category not in NEGATABLE or not _negated(normalised, m))
                    and not policy_concepts.is_lesson(normalised, m.start(), category)
                    and not (category in SKIPPING and policy_concepts.negated_skip(normalised, m.start()))
                ),
                None,
            )
            if match:
                excerpt = policy_concepts.excerpt_around(normalised, match.start(), match.end())
                findings.append((category, reason, excerpt))
                break
    found = {category for category, _reason, _excerpt in findings}
    for category, excerpt in policy_concepts.find(normalised):
        if category not in found:
            findings.append((category, REASONS[category], excerpt))
    return tuple(findings)


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


def screen(
    *,
    applies_when: str,
    steps: Iterable[str],
    forbidden_actions: Iterable[str] = (),
    preconditions: Iterable[str] = (),
    postconditions: Iterable[str] = (),
    verify_command: str = "",
) -> list[Finding]:
    """Screens every field an agent receives: appliesWhen, the steps (their conditions included),
    and a coding procedure's Before:/After:/Verify: lines. forbiddenActions are screened for
    injected instructions only: "do not skip approval" is the lesson, not the attack."""
    findings = screen_text(applies_when, "appliesWhen")
    for index, step in enumerate(steps, start=1):
        findings.extend(screen_text(step, f"steps[{index}]"))
    for name, items in (("preconditions", preconditions), ("postconditions", postconditions)):
        for index, item in enumerate(items, start=1):
            findings.extend(screen_text(item, f"{name}[{index}]"))
    if verify_command:
        findings.extend(screen_text(verify_command, "verifyCommand"))
    for index, action in enumerate(forbidden_actions, start=1):
        findings.extend(
            f for f in screen_text(action, f"forbiddenActions[{index}]") if f.category == "tool_output_instruction"
        )
    return findings
