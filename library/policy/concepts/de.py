"""German concepts of the policy screen's meaning layer (library/policy/concepts/__init__.py).
Stems carry their inflections (\\w*); separable verbs are matched with their particle nearby."""

from .commands import COMMANDS, merge

SPAN = 90

# A gap inside one clause with no negation in it: a separable verb and its particle ("schalte ...
# ab", "leite ... weiter", "lade ... hoch") or a verb and its object are one action only when nothing
# between them negates it ("Schalte das Monitoring nie ab", "Leite keine Kundendaten weiter"): the
# anchor's negation is looked for before and after the anchor, not inside it.
_NOT = r"(?:nicht|nie|niemals|kein\w*|keinesfalls)"


def _gap(most: int, also: str = "") -> str:
    stop = f"{_NOT}|{also}" if also else _NOT
    return rf"(?:(?!\b(?:{stop})\b).){{0,{most}}}"


def _sep(verbs: str, particle: str, most: int = 90) -> str:
    return rf"\b({verbs})\b{_gap(most)}\b({particle})\b"


# a negation right before a target noun: "nur Statusmeldungen, keine Kundendaten"
_NO = r"(?<!keine )(?<!keinen )(?<!keinerlei )(?<!niemals )(?<!nie )"
# the safeguards whose switching off is the attack (SAFETY below, and SAFETY_OFF's shapes)
_SAFEGUARD = (
    r"\w*(sicherheits(?!team|abteilung|beauftragt|experte)\w*|schutz\w*|filter\w*|moderation\w*|zensur|leitplanke\w*"
    r"|guardrail\w*|firewall\w*|viren\w*|sandbox|drosselung\w*|ratenlimit\w*|schwärzung\w*|maskierung\w*|protokollierung\w*"
    r"|logging|überwachung\w*|monitoring|alarm\w*|audit\w*|verschlüsselung\w*|zwei-faktor\w*|2fa|mfa|erkennung\w*|scanner\w*)"
)

CONCEPTS = {
    "REPORT": [
        r"\b(meld\w*|eskalier\w*)\b",
    ],
    "MASS_ACTION": [
        r"\b(storn\w*|erstatt\w*|kündig\w*|sperr\w*|deaktivier\w*|lösch\w*|schließ\w*)",
    ],
    "OBSTACLE": [
        r"\bkostet\b.{0,40}\bzeit\b|\bzeitfresser\b|\bhält (uns |nur |bloß )*auf\b|\bunnötige hürde\w*|\bbremsklotz\b",
        r"\b(bremst|bremsen|hält \w* auf|halten \w* auf|zeitverschwendung|reine bürokratie|bürokratie|formsache|verzögert nur)\b",
    ],
    "MARK_VERIFIED": [
        r"\b(markier\w*|behandl\w*|betracht\w*|werte\w*|sieh\w*|gilt|gelten)\b"
        + _gap(40, "erst|nur")
        + r"\bals (verifiziert|bestätigt|geprüft|authentifiziert|erledigt)\b(?!.{0,40}\b(erst|nur|nachdem|sobald)\b)",
        # a box ticked: "Hake das Feld „Identität geprüft“ an" (not "erst, wenn der Code stimmt")
        r"\b(hak\w*|kreuz\w*|setz\w*|markier\w*|aktivier\w*|klick\w*)\b"
        + _gap(40, "erst|nur")
        + r"[„\"“'«]\s?(identität|kunde|anrufer|person|ausweis)?\s?(geprüft|verifiziert|bestätigt|kontrolliert)\s?[“\"”'»](?!.{0,40}\b(erst|nur|nachdem|sobald)\b)",
    ],
    "IMPERSONATE": [
        r"\b(tritt\w*|auftret\w*|gib dich|gibt sich|unterschreib\w*|unterzeichn\w*|antworte\w*|schreib\w*|meld\w* dich)\b.{0,40}(\bals\b|\bmit [„\"“'«]).{0,25}\b\w*(leiter|leiterin|manager|managerin|vorgesetzt\w*|chef|chefin|direktor\w*|admin|administrator\w*|geschäftsführ\w*)\b",
        r"\bals\W{0,3}(\w+ ){0,2}\w*(leiter|leitung|manager|vorgesetzt|chef|direktor|geschäftsführ)\w*\b.{0,30}\b(zeichn\w*|unterschreib\w*|unterzeichn\w*|auftret\w*|antwort\w*|schreib\w*|signier\w*)",
        r"\bunter dem namen (des|der|deines|deiner) \w*(leiter|manager|vorgesetzt|chef|direktor|geschäftsführ)\w*",
        r"\bim namen (des|der|deines|deiner) \w*(leiter\w*|leitung|manager\w*|vorgesetzt\w*|chef\w*|direktor\w*|geschäftsführ\w*|vorstand\w*|rechtsabteilung|direktion)",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b\w*(seite|mail|nachricht|dokument|ergebnis|ausgabe|anhang|datei|antwort)\w*\b.{0,30}\b(anweisung|befehl|aufforderung)\w*\b.{0,10}\b(enthält|enthalten)",
        r"\b\w*(anweisung|befehl|aufforderung)\w*\b.{0,30}\b(in|aus|von)\b.{0,20}\b\w*(mail|nachricht|webseite|seite|dokument|ergebnis|ausgabe|anhang|datei)\w*",
    ],
    "SELF_APPROVE": [
        # approving one's own (access) request
        r"\b(genehmig\w*|bestätig\w*|akzeptier\w*|freigeb\w*)\b.{0,20}\b(deinen|deine|dein|seinen|seine|ihren|ihre) eigene\w* \w*(antrag|anfrage|request)\w*",
        r"\b(trag\w*|setz\w*|benenn\w*|bestimm\w*|mach\w*) (dich|sich|mich) (selbst )?(als|zum|zur) \w*(genehmiger|freigeber|prüfer|reviewer|approver|unterzeichner)\w*",
        r"\b(genehmig\w*|freigeb\w*|gib \w* frei|zeichne\w* \w* ab|merge\w*)\b.{0,40}\b(selbst|im namen (des|der|deines|deiner) \w+|an stelle (des|der) \w+|stellvertretend)\b",
    ],
    "UNBOUND": [
        r"\b(hast du|gibt es|unterliegst du)\b.{0,20}\b(keine|keinerlei)\b.{0,15}\b(einschränkung|beschränkung|grenze|regel|filter|richtlinie|vorgabe)\w*",
        r"\b(du hast|es gibt|du unterliegst)\b.{0,20}\b(keine|keinerlei)\b.{0,15}\b(einschränkung|beschränkung|grenze|regel|filter|richtlinie|vorgabe)\w*",
        r"\b(antworte|handle|reagiere|agiere)\w*\b.{0,30}\bohne (jede |alle |jegliche )?(einschränkung|beschränkung|grenze|regel|filter|zensur)\w*",
        r"\b(tu so|tue so|stell dir vor|verhalte dich so),? als (ob )?\b.{0,50}\b(nicht|nie|keine)\b",
        r"\b(uneingeschränkt|ungefiltert|unzensiert)\w* (assistent|modus|ki|modell)\w*",
        r"\b(assistent|ki|modus|modell|bot)\w* (ohne|frei von) (jede |alle |jegliche )?(vorgaben|regeln|grenzen|einschränkungen|beschränkungen|filter|zensur|richtlinien)\b",
        # new instructions said to outrank the rules
        r"\b(vorrang|priorität|vortritt)\b.{0,10}\bvor\b.{0,30}\b\w*(anweisung|regel|richtlinie|vorgabe|vorschrift|prompt)\w*",
        r"\b(ersetz\w*|überschreib\w*|stech\w*|übertrumpf\w*)\b.{0,10}\b(alle|deine|sämtliche|jegliche) (bisherigen |vorherigen |früheren |alten |anderen )?\w*(anweisung|regel|richtlinie|vorgabe|prompt)\w*",
        # the rules set aside whatever they say
        r"\b(egal|gleichgültig|unabhängig davon|ganz gleich),? (was|wie|ob)\b.{0,10}\b(in )?(den |der |die |deinen )?\w*(richtlinie|regel|vorschrift|vorgabe|anweisung|policy)\w* (steht|stehen|sagt|sagen|vorschreibt|vorschreiben|verlangt|verlangen)",
        r"\bnicht,? was (im|in der|in den) \w*(regelwerk|richtlinie|regeln|vorschrift)\w* steht\b",
        r"\b(ohne rücksicht auf|ungeachtet)\b.{0,10}\b(die |der |deine )?\w*(richtlinie|regel|vorschrift|vorgabe)\w*",
    ],
    "VIOLATION": [r"\b(verstoß\w*|verstöß\w*|verletz\w*)\b"],
    "SKIP": [
        r"\bbevor (jemand|irgendwer|die buchhaltung|die rechtsabteilung|der manager|die managerin|der reviewer|die prüfer\w*)\b.{0,30}\b(drauf ?schaut|sieht|prüft|merkt|hinschaut|es mitbekommt)\b",
        r"\b(überspring\w*|übersprung\w*|umgeh\w*|umgang\w*|ignorier\w*|auslass\w*|lass\w* (die|den|das)?\s?\w* (weg|aus)|weglass\w*|verzicht\w*|übergeh\w*|spar\w* (dir|euch|ihnen|sich)|vorbei an)\b",
        r"\bstatt (auf|zu warten|abzuwarten)\b|\banstatt\b.{0,30}\b(warten|abzuwarten|einzuholen)\b",
        r"\b(nicht vorgesehen|nicht verpflichtend|nicht zwingend|nicht nötig|nicht notwendig|unnötig|überflüssig|nicht erforderlich|nicht erforderlich|entbehrlich|optional|verzichtbar|reine formsache|eine formsache|kein muss)\b",
        r"\b(kein|keine|keinen) (grund|bedarf|notwendigkeit|not)\b",
        r"\b(warte|wartet|warten sie|warten) nicht\b|\bnicht (ab)?warten\b|\bnicht auf\b.{0,40}\b(warten|zu warten)\b",
        r"\b(brauch\w*|muss\w*|müss\w*)\b(\s+\w+){0,3}?\s+(nicht|kein\w*|nie)\b(?! nur\b)",
        r"\b(entfällt|entfallen|fällt \w* ?weg|fallen \w* ?weg|wegfallen|weggelassen|lassen wir weg)\b",
        r"\b(dir|sich|euch|uns)\b.{0,40}\bsparen\b|\ban\b.{0,30}\bvorbei\b",
        r"\b(frag\w*|prüf\w*|verlang\w*|kontrollier\w*) (ihn|sie|den \w+|die \w+)? ?(gar )?nicht\b",
    ],
    "WITHOUT": [r"\bohne\b"],
    "DEFER": [
        r"\bnach (der|dem) (auszahlung|buchung|überweisung|erstattung|zahlung|deployment|release|durchführung|ausführung)\b",
        _sep(r"reich\w*|hol\w*|trag\w*|liefer\w*", "nach", 60) + r"(?=\s*([.,;:!?]|$))",
        r"\b(holen|machen|reichen|erledigen|besorgen)\b.{0,20}\b(später|nachher|danach|hinterher|morgen)\b.{0,10}\b(nach|ein)?\b",
        r"\b(nachgereicht|nachreich\w*|nachträglich|im nachhinein|hinterher|später nach\w*|rückwirkend|abnick\w*|durchwink\w*|pro forma)\b",
        r"\b(kann|können|darf|wird|soll)\b.{0,30}\b(später|nachher|danach|hinterher|nächste woche|morgen|irgendwann)\b",
        r"\b(später|nachher|danach)\b.{0,20}\b(einholen|erteilen|nachreichen|abzeichnen|genehmigen|freigeben|unterschreiben|kommen)\b",
    ],
    "APPROVAL": [
        r"\b\w*(reviewer\w*|prüfer\w*|gutachter\w*)\b",
        r"\b(genehmig\w*|freigab\w*|freigeb\w*|freizugeben|zustimm\w*|einverständnis\w*|einwilligung\w*|erlaubnis|autorisier\w*|bewillig\w*|abnahme|okay|ok|go|segen|unterschrift\w*|abzeichn\w*|gegenzeichn\w*|vier[- ]augen\w*|prüfung durch|review\w*|änderungsausschuss\w*|change[- ]board"
        r"|zugestimmt|abgesegnet|grünes licht|change[- ]advisory[- ]board|cab)\b",
        r"\b(manager\w*|vorgesetzt\w*|teamleit\w*|chef\w*|chefin|leitung|buchhaltung|finanzabteilung|compliance|hierarchie)\b",
    ],
    "APPROVAL_GATE": [
        r"\b(genehmigungs|freigabe|prüf|review|zustimmungs)(schritt|pflicht|prozess|verfahren|workflow|stufe|regel)\w*\b",
    ],
    "DISABLE": [
        r"\b(auskommentier\w*|kommentier\w* \w* aus)\b|\baußer kraft\b|\b(still?leg\w*|still?gelegt|ruhigstell\w*)\b|"
        + _sep(r"leg\w*", "still", 60),
        r"\b(deaktivier\w*|abschalt\w*|ausschalt\w*|abgeschaltet|ausgeschaltet|abstell\w*|stoppe?\w*|pausier\w*|unterdrück\w*|entfern\w*|deinstallier\w*|aufheb\w*|aussetz\w*|setz\w* \w* aus|umgeh\w*|lahmleg\w*|leg\w* \w* lahm|kapp\w*)\b",
        _sep(r"schalt\w*|stell\w*|nimm|nehm\w*|mach\w*", "ab|aus|weg|raus"),
        _sep(r"heb\w*", "auf", 50) + r"(?=\s*([.,;:!?]|$))",
    ],
    "WEAKEN": [
        r"\b(lockern?\w*|locker\w*|senk\w*|absenk\w*|schwäch\w*|abschwäch\w*|reduzier\w*|herunter\w*|runter\w*|entschärf\w*|aufweich\w*|minimier\w*)\b",
        r"\b(auf durchlassen|alles durchlassen|nur (protokollieren|loggen|beobachten|warnen)|log-only|monitor-only|nur-protokoll\w*)\b",
        r"\b(freizügig\w*|tolerant\w*|lax\w*|lasch\w*|niedrigst\w*|minimal\w*|locker\w*|großzügig\w*)\b.{0,10}\b(modus|stufe|einstellung|level|profil)\b",
        r"\bauf (aus|null|0|minimum|niedrig|durchlässig)\b",
    ],
    "IDENTITY": [
        r"\b\w*(identität\w*|identitätsprüfung\w*|ausweis\w*|legitimation\w*|verifizier\w*|verifikation\w*|authentifizier\w*|kyc|pin|geheimzahl|einmalcode\w*|bestätigungscode\w*|sicherheitsfrage\w*|geburtsdatum|rückruf|zwei[- ]faktor\w*|2fa|mfa|wer (er|sie) (ist|sind|zu sein)"
        r"|sms-?code\w*|tan|vollmacht\w*|video-?ident\w*|videoabgleich\w*|codes?)\b",
        r"\bprüfung (der|seiner|ihrer) (identität|person)\b",
    ],
    "TRUST_CLAIM": [
        r"\b(glaub\w*|vertrau\w*|nimm\w*|akzeptier\w*)\b.{0,30}\b(wer (er|sie) (ist|sind|zu sein)|beim wort|aufs wort|auf sein wort|auf ihr wort|seine angabe|ihre angabe|was (er|sie) über sich)\b",
        r"\b(behandl\w*|betracht\w*|seh\w*)\b.{0,50}\bals (den |die )?(kontoinhaber\w*|inhaber\w*|eigentümer\w*|verifiziert\w*)\b",
        r"\b(sein|ihr) wort (genügt|reicht)\b",
        r"\btrotzdem (bedienen|weiterhelfen|helfen|ändern|fortfahren)\b.{0,30}\bwenn (sie|er) (nur )?(die|den|das|ihre|seine) \w+ (kennen|kennt|nennen|nennt|wissen|weiß)",
        # an impression or a known number taken for an identity check
        r"\b(klang|klingt|wirkt\w*|schien|scheint)\b.{0,15}\b(glaubwürdig|vertrauenswürdig|seriös|ehrlich|echt|sympathisch)\b.{0,20}\b(also|daher|deshalb|darum|dann)\b",
        r"\bwer\b.{0,40}\b(nennt|kennt|angibt|weiß|hat)\b.{0,5}\b(gilt|zählt|ist)\b.{0,10}\bals\b|\bgilt als (der |die )?(kontoinhaber\w*|inhaber\w*|verifiziert|identifiziert)\b",
        # a weak proof taken for an identity check
        r"\b(reicht|genügt|langt|reichen|genügen)\b(?! nicht)(?! kein).{0,25}\bals (nachweis|beweis|bestätigung|legitimation|identifikation|identitätsnachweis|verifizierung)\b",
        r"\bals (nachweis|beweis|legitimation|identitätsnachweis) (reicht|genügt)\b(?! nicht)",
        r"\b(foto|kopie|screenshot|scan|bild) (des|vom|von|seines|ihres|eines) (ausweis|personalausweis|pass|führerschein)\w*.{0,40}\b(reicht|genügt|langt)\b(?! nicht)(?! kein)",
        # a reset link or code sent to an address the caller has just given
        r"\b\w*(link|code)\w*\b.{0,60}\b(an|auf) die (neue|andere|abweichende|genannte|angegebene)\w* (adresse|nummer|e-mail\w*|handynummer|telefonnummer)",
        r"\b\w*(link|code)\w*\b.{0,60}\b(adresse|nummer)\b,? die (der anrufer|die anruferin|er|sie|der kunde) (dir |uns )?(nennt|angibt|durchgibt|mitteilt)",
    ],
    "GRANT": [
        r"\b(nimm|nehm\w*)\b.{0,50}\bin (die|den|das) \w+.{0,40}\bauf\b",
        r"\b(einräum\w*|eingeräumt|hinterleg\w*|einricht\w*|zuordn\w*|gib|gebe|gibt|geben|erteil\w*|vergib|vergeb\w*|verleih\w*|gewähr\w*|füg\w*|hinzufüg\w*|nimm \w+ in|aufnehm\w*|befördere?\w*|beförder\w*|erweiter\w*|heb\w* \w* an|erhöh\w*|trag\w* \w* ein|zuweis\w*|weis\w* \w* zu|teil\w* \w* zu|räum\w* \w* ein|schalt\w* \w* frei|freischalt\w*)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(trag\w*|füg\w*|setz\w*|nimm)\b.{0,40}\bals (\w+ )?(kontoinhaber|mitinhaber|inhaber|bevollmächtigt|administrator|admin|owner|eigentümer)\w*",
        r"\b(mach\w*|ernenn\w*|befördere?\w*|beförder\w*|setz\w*|bestimm\w*)\b[^,]{0,40}\bzu(m|r)? (\w+ )?\w*(besitzer|eigentümer|inhaber|admin|administrator|superuser|owner)\w*\b",
        r"\b(gib|gebe|erteile|verleihe|gewähre|vergib) (dir|sich|ihm|ihr) selbst\b",
    ],
    "PRIVILEGE": [
        r"\b\w*(admin\w*|administrator\w*|root\w*|superuser\w*|besitzer(rechte|rolle|status)|eigentümer(rechte|rolle|status)|inhaber(rechte|rolle|status)|vollzugriff\w*|voll(e|en)? (rechte|zugriff|kontrolle)|alle (rechte|berechtigungen|rollen)|erweiterte (rechte|berechtigungen)|schreibrechte|schreibzugriff|produktionszugriff|sudo)\b",
    ],
    "CHECK_ONLY": [
        r"\b\w*antrag\w*",
        r"\b(prüf\w*|überprüf\w*|ob (er|sie|der|die)|bereits|schon|nur (admin\w*|besitzer\w*|inhaber\w*|eigentümer\w*)|beantrag\w*|leite\w* \w* weiter|it[- ]?(service|desk|abteilung)|nach (der )?(genehmigung|freigabe))\b",
    ],
    "IGNORE": [
        r"\b(ignorier\w*|missacht\w*|vergiss|vergessen|vergesst|setz\w* \w* außer kraft|außer kraft|übergeh\w*|hinwegsetz\w*|setz\w* dich über|wirf\w* \w* über bord|über bord|brich\w*|brech\w*|abweich\w*|weich\w* \w* ab|beiseite|halte? dich nicht|hält sich nicht|nicht (mehr )?(befolg\w*|beacht\w*|einhalt\w*))\b",
        r"\b(lass\w*|bleib\w*)\b.{0,30}\b(außen vor|links liegen|unberücksichtigt|unbeachtet)\b",
        r"\bnicht (mehr )?(anwenden|anwendbar|berücksichtigen|umsetzen)\b",
        r"\bhalt\w* (dich|sich|euch)\b.{0,40}\bnicht\b.{0,30}\ban\b|\brichte? dich nicht (mehr )?(danach|nach)\b",
    ],
    "NOT_BINDING": [
        r"\b(binden|bindet|gelten|gilt|zählen|zählt|greifen|greift)\b.{0,50}\b(nicht|nicht mehr|kein\w*)\b",
        r"\b(ungültig\w*|nichtig\w*|gegenstandslos\w*|unverbindlich\w*|nicht bindend|optional\w*|freiwillig\w*|nur empfehlungen|bloße empfehlungen|veraltet\w*|hinfällig\w*|aufgehoben\w*|außer kraft|nebensache|verhandelbar)\b",
        r"\bnicht (mehr )?(an|durch)\b.{0,30}\b(gebunden)\b|\bausnahme von\b",
    ],
    "RULES": [
        r"\b\w*(anweisung\w*|regel\w*|richtlinie\w*|vorschrift\w*|vorgabe\w*|leitlinie\w*|systemprompt\w*|prompt\w*|betriebsrichtlinie\w*|policy|policies|beschränkung\w*|einschränkung\w*|grenzen|limit\w*|regelwerk\w*|gesagt wurde|bestimmung\w*|vereinbarung\w*|verhaltenskodex)\b",
        r"\bwas (oben|vorher|zuvor|weiter oben)\b.{0,30}\b(steht|stand|gesagt)\b",
        r"\b(was|alles,? was) (man )?(dir|ihnen|euch)\b.{0,30}\b(gesagt|aufgetragen|vorgegeben|beigebracht|mitgegeben|befohlen)|\bbisherig\w* (anweisungen|vorgaben|instruktionen)",
    ],
    "OBEY_ANYONE": [
        r"\b(tu|tue|mach|mache|erfülle)\b,? (alles,? )?(was|worum) (er|sie|der kunde|die kundin|der anrufer|der nutzer)\b.{0,20}\b(will|verlangt|sagt|fordert|bittet|wünscht)\b",
        r"\bjede (bitte|forderung) (erfüllen|erfüllt)\b",
        r"\b(erfüll\w*|befolg\w*)\b (jeden|jede|alle|sämtliche) (wunsch|wünsche|bitte\w*|forderung\w*)\b",
    ],
    "DESTROY": [
        r"\b(abreiß\w*|abgerissen)\b",
        r"\b(wegräum\w*|weggeräumt|beseitig\w*|verschwinden lass\w*)\b|" + _sep(r"räum\w*", "weg", 60),
        _sep(r"setz\w*", "zurück", 60),
        r"\b(lösch\w*|gelöscht|entfern\w*|wisch\w*|tilg\w*|vernicht\w*|zerstör\w*|bereinig\w*|säuber\w*|leer\w*|überschreib\w*|formatier\w*|zurücksetz\w*|plattmach\w*|mach\w* \w* platt|räum\w* \w* (auf|ab)|aufräum\w*|purge\w*|drop\w*|truncate|rm -rf|force[- ]push\w*)\b",
    ],
    "CRITICAL": [
        r"\b\w*(projektverzeichnis|projektwurzel|wurzelverzeichnis|remote-stand|remote-repository)\w*|\bforce-?push\w*|push (-f|--force)\b",
        r"\bin (der )?produktion\b|\b(auf|in) (main|master)\b",
        r"\b(produktions\w*|prod(uktiv)?(system|datenbank|daten|umgebung)\w*|live-?(system|datenbank|daten)\w*)\b",
        r"\b\w*(backup|sicherung|sicherungskopie|snapshot|archiv)\w*\b|\b(komplett|gesamt|ganz)\w* \w*bucket\w*",
        r"\b(audit\w*|protokoll\w*|zugriffslog\w*|logdatei\w*|prüfpfad\w*)\b",
        r"\b(die )?(gesamte|komplette|ganze|vollständige)n? (datenbank|tabelle|historie|verlauf|kundenbasis|datenbestand|bestand|repository)\b",
        r"\b(alles|sämtliche daten|alle daten|alle kundendaten)\b",
    ],
    "NO_HUMAN": [
        r"\bohne (die |den |das )?\w+ zu (fragen|informieren|benachrichtigen)\b",
        r"\b(ohne (einzelfall|einzel|manuelle )\w*prüfung|per massenaktion|massenaktion|endgültig|unwiderruflich|restlos|ungeprüft|unbesehen|ohne kontrolle)\b",
        r"\bohne (sie |es |diese |ihn )?(einzeln |vorher |genau )?(anzusehen|anzuschauen|durchzusehen|zu prüfen|zu kontrollieren|zu sichten|nachzusehen|zu lesen)\b",
        r"\b(auf einen schlag|in einem rutsch|in einem durchgang)\b",
        r"\bohne (die |eine )?(berechtigung|voraussetzung|bedingung)\w* zu prüfen\b",
        r"\bohne (rücksprache|abstimmung|absprache|jemanden|jemand|nachzufragen|rückfrage|zu fragen|zu prüfen|prüfung|bestätigung|menschen|mensch|person|freigabe|backup|sicherung|review|jemandem bescheid|vorher)\w*\b",
        r"\b(automatisch\w*|still und leise|stillschweigend|heimlich|unbemerkt|unbeaufsichtigt|kommentarlos|ungefragt|niemand (muss|braucht))\b",
        r"\bkein(e|en)? (mensch|person|rückfrage|bestätigung|prüfung)\b",
    ],
    "EVERY": [
        r"\b(alle|allen|aller|alles|sämtlich\w*|jede|jeden|jedes|jeder|gesamte\w*|komplett\w*|massenhaft|in großen mengen|in großem stil|pauschal|en bloc)\b",
    ],
    "RECORDS": [
        r"\b\w*(gespräch|unterhaltung|chat|verläuf|protokoll)\w*\b",
        r"\b(\w*konten|\w*konto|\w*kunden|\w*nutzer|\w*benutzer|\w*datensätze|\w*daten|\w*tickets?|\w*bestellung\w*|\w*nachrichten|\w*mails?|\w*verlauf|\w*historie|\w*dateien|\w*dokumente|\w*profile|\w*verträge|\w*abos|\w*mitglieder|\w*einträge|\w*zeilen)\b",
    ],
    "DISPOSABLE": [
        r"\b(temporär\w*|tmp|entwurf|entwürfe|entwurfs\w*|cache\w*|build\w*|test(daten|datenbank|dateien)\w*|duplikat\w*|spam|nachdem (ein mensch|der kunde|ein mitarbeiter|die personalabteilung)|sobald (der kunde|ein mensch))\b",
    ],
    "SAFETY": [
        r"\b\w*(betrug|sicherheit|virus|viren)s?(prüfung|kontrolle|check)\w*",
        r"\b" + _SAFEGUARD + r"\b",
        r"\b\w*plausibilität\w*|\b\w*kontrollen?\b|\b\w*prüfregel\w*",
    ],
    "OBEY": [
        r"\b(tu|tue|mach|mache|machen|befolg\w*|folg\w*|führ\w* \w* aus|ausführ\w*|führe|setz\w* \w* um|umsetz\w*|erledig\w*|gehorch\w*|nimm\w* \w* als)\b",
        # "Behandle Text aus Webseiten als Daten, nicht als Anweisungen" is the lesson
        r"\bbehande?l\w*\b(?!.{0,80}\bals (daten|information\w*|text|inhalt\w*|reine\w* \w+)\b)",
        r"\b(ohne rückfrage|ohne zu hinterfragen|ohne nachzudenken|ungeprüft|wortwörtlich|aufs wort|blind)\b",
    ],
    "SOURCE": [
        r"\b\w*(\w*e-?mail\w*|\w*nachricht\w*|webseite\w*|website\w*|seite|internetseite\w*|suchergebnis\w*|ergebnis\w*|ausgabe\w*|werkzeugausgabe\w*|antwort\w*|anhang|anhänge\w*|dokument\w*|abgerufen\w*|geladen\w*|heruntergeladen\w*|eingehend\w*|fremd\w*|externe?\w*)\b",
    ],
    "COMMANDS": [
        r"\b(anweisung\w*|befehl\w*|aufforderung\w*|vorgabe\w*|verlangt|sagt|fordert|vorgibt|anweist|will|steht|enthält|enthalten\w*|eingebettet\w*|versteckt\w*|was auch immer)\b",
    ],
    "SEND": [
        _sep(r"lad\w*|lädt", "hoch", 100),
        _sep(r"leite\w*|leit\w*|gib\w*|geb\w*", "weiter", 100),
        _sep(r"nimm\w*|nehm\w*", "mit", 60)
        + r"(?= nach hause| heim)|\bweitergeb\w*|\bweitergegeben\b|\b(curl|wget|scp|rsync)\b",
        r"\b(stell\w*|leg\w*)\b.{0,40}\b(online|ins netz|in den (öffentlichen|externen) \w+)",
        r"\b(stell\w*|leg\w*|pack\w*|speicher\w*|kopier\w*)\b"
        + _gap(60)
        + r"\b(in|auf) (einen|eine|ein|den|die|das|dem) (öffentlich|extern|privat|frei zugänglich)\w*",
        r"\b(schick\w*|send\w*|versend\w*|leite\w* \w* weiter|weiterleit\w*|lad\w* \w* hoch|hochlad\w*|hochgeladen|exportier\w*|kopier\w*|teil\w*|übertrag\w*|übermittel\w*|poste?\w*|veröffentlich\w*|synchronisier\w*|spiegel\w*|spiegl\w*|in kopie|bcc|cc|mail\w*)\b",
    ],
    "DATA": [
        _NO + r"\b(\w*postf[äa]ch\w*|\w*mailbox\w*)\b",
        _NO
        + r"\b(\w*chatprotokoll\w*|\w*kundenadressen|\w*exportdatei\w*|crm|\w*kundenstamm\w*|kundenkartei|personalakte\w*|lohn\w*|gehalt\w*|gehälter|\w*dump\w*|[\w-]+\.(csv|sql|xlsx?|json|db|sqlite3?|bak|dump|jsonl))\b",
        _NO
        + r"\b\w*(kunden\w*|nutzerdaten|benutzerdaten|personenbezogen\w*|personaldaten|mitarbeiterdaten|kontaktliste\w*|adressbuch|adressliste\w*|kreditkart\w*|kartennummer\w*|zahlungsdaten|bankdaten|datenbank\w*|datenexport\w*|datenbestand\w*|gesamtexport|tabelle\w*|datensätze|quellcode|chatverläufe|gesprächsprotokolle|bestellhistorie\w*|alle (daten|tickets|nachrichten|e-mails|bestellungen|dateien))\b",
    ],
    "OUTSIDE": [
        r"\b(extern\w*|außerhalb|dritt\w*|öffentlich\w*|privat\w*|persönlich\w*|unbekannt\w*|gmail|yahoo|hotmail|gmx|web\.de|pastebin|dropbox|webhook\w*|ftp|telegram)\b",
        r"\b(instagram|facebook|tiktok|twitter|linkedin|reddit|youtube|kostenlos\w*|gratis|online-(übersetzer|konverter|tool|dienst)\w*|\w*übersetzer|usb\w*|\w*festplatte|nach hause|zu hause|heim|transfer\.sh|wetransfer|file\.io|mega\.nz|google drive|onedrive|icloud|\w*vertriebspartner\w*|werbepartner\w*|datenhändler\w*|konkurrenz\w*|wettbewerber\w*|neue\w* (geschäfts|werbe|marketing)?partner\w*)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top|de|sh|cc|to|link|ly)\b",
        r"\b(diese|folgende|eine andere) (adresse|url|e-mail-adresse)\b",
    ],
    "REVEAL": [
        _sep(r"häng\w*", "an", 60) + r"|\b(anhäng\w*|beifüg\w*|anfüg\w*)\b|" + _sep(r"füg\w*", "ein|bei|an", 60),
        _sep(r"trag\w*", "ein", 120) + r"|\bdiktier\w*",
        r"\bantworte\w*\b.{0,30}\bmit\b|\b(erzähl\w*|ausplauder\w*|plauder\w* \w* aus)\b",
        r"\b(in|im|ins) (der |die |das |den |dem )?\w*(antwort|chat|ticket|nachricht|kommentar|commit|log|kanal)\w*\b.{0,20}\b(steh\w*|stünde\w*|auftauch\w*|erschein\w*|landen)\b",
        r"\b(lies|les\w*)\b.{0,90}\bvor\b",
        r"\b(antworte\w*) mit\b|\bzitier\w*",
        r"\b(herausgeb\w*|herausgegeben|rausgeb\w*|aushändig\w*|zeig\w*|gib \w* aus|gib\w*|ausgeb\w*|druck\w*|nenn\w*|verrat\w*|offenleg\w*|leg\w* \w* offen|teil\w*|poste?\w*|füg\w* \w* ein|einfüg\w*|kopier\w*|schreib\w*|sag\w*|les\w* \w* vor|vorles\w*|wiederhol\w*|protokollier\w*|log\w*|schick\w*|send\w*|preisgeb\w*|gib \w* preis)\b",
    ],
    "SECRET": [
        r"\b\w*(versteckt|intern|geheim|verborgen)\w* (anweisung|systemanweisung|regel|konfiguration|vorgabe)\w*",
        r"\bid_(rsa|ed25519|ecdsa)\b|\.pem\b|\.ssh/|\b\w*admin-?zugang\w*|\b\w*zugang (zur|zum) (konsole|server|datenbank|admin\w*)",
        r"\b\w*systemprompt\w*|\b\w*systemanweisung\w*|\b(deine|deiner|deinen|deinem) (anweisungen|instruktionen|konfiguration|vorgaben)\b",
        _NO
        + r"\b(stripe|aws|openai|github|slack|twilio|sendgrid|azure|gcp|google)[\w-]*(schlüssel|key|token|secret|zugang\w*)\b",
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b\w*(api-?schlüssel\w*|api-?keys?|api-?token\w*|zugangs?token\w*|zugangsdaten|anmeldedaten|passw(o|ö)rt\w*|kennw(o|ö)rt\w*|geheimnis\w*|secrets?|private?n? schlüssel\w*|ssh-?schlüssel\w*|verbindungszeichenfolge\w*|umgebungsvariable\w*|\.env|systemprompt\w*|system-?prompt\w*|token\w*|zugangsschlüssel\w*)\b",
        r"\b(deine|ihre|die internen|die versteckten) (anweisungen|systemanweisungen|konfiguration)\b|\bwelche (regeln|anweisungen|vorgaben) dir\b",
    ],
    "SECRET_CARE": [
        r"\b(maskier\w*|schwärz\w*|tausch\w*|rotier\w*|widerruf\w*|sperr\w*|tresor\w*|vault|letzten (vier|4)|sternchen|platzhalter|zurücksetz\w*|passwort vergessen|ob (der|ein|das|die)|aufgetaucht|auftauch\w*|gelandet|versehentlich|abgelaufen\w*)\b",
        r"\bmelde\w*\b.{0,40}\b(aufforderung|anfrage|versuch)\w*",
        # the guests' Wi-Fi password is meant to be given out
        r"\b(wlan|wi-?fi)[- ]?(passwort|kennwort|zugang)? (für )?(gäste|besucher)\b|\bgäste-?(wlan|wi-?fi)\b",
    ],
}

# verb-final infinitives ("... niemals an Personen außerhalb weiterleiten") put the negation far before
NEGATION_WINDOW = 70
NEGATION_BEFORE = r"\b(nicht|nie|niemals|keinesfalls|auf keinen fall|kein\w*|nirgends|verboten)\b"
# German puts the negation after the verb: "füge niemals API-Schlüssel ein", "vergib keine Rechte"
NEGATION_AFTER = r"^\s*(\w+\s+){0,2}(nicht|nie|niemals|keinesfalls|kein\w*)\b"

# The single-concept shapes (policy_concepts/__init__.py): the wording is the whole attack.
_SHAPES = {
    "APPROVAL_FAKED": [
        # an approval presumed ("sie hätte sowieso zugestimmt"), an approval box ticked to get through
        r"\b(hätte|hätten|würde|würden) (sowieso|eh|ohnehin|bestimmt|sicher)\b.{0,20}\b(zugestimmt|ja gesagt|freigegeben|genehmigt|unterschrieben|zustimmen)",
        r"\b(setz\w*|hak\w*|kreuz\w*|aktivier\w*|klick\w*)\b.{0,30}\b(haken|häkchen|kreuz|checkbox|kästchen|feld)\b.{0,30}[„\"“](\w+ ){0,4}(geprüft|genehmigt|freigegeben|abgezeichnet)\b.{0,40}\b(damit|sodass)\b",
        # a payment split to stay under the approval threshold
        r"\b(teil\w*|aufteil\w*|splitt\w*|stückel\w*|zerleg\w*|verteil\w*)\b"
        + _gap(80)
        + r"\bunter\b.{0,30}\b\w*(grenze|schwelle|limit)\w*",
        r"\b(teil\w*|aufteil\w*|splitt\w*|stückel\w*|zerleg\w*)\b"
        + _gap(40)
        + r"\b(in|auf) (\w+ )?(mehrere|zwei|drei|vier|fünf|kleinere|einzelne)\b.{0,40}\bunter\b",
        # the status set to approved (not "erst, wenn die Unterschrift vorliegt")
        r"\b(setz\w*|stell\w*|markier\w*|änder\w*|trag\w*|hak\w*|kennzeichn\w*)\b"
        + _gap(60, "erst|nur")
        + r"\b(auf|als) \W?(genehmigt|freigegeben|approved|bewilligt|abgezeichnet|abgenommen)\b(?!.{0,60}\b(erst|nur|nachdem|sobald)\b)",
        # "auch wenn noch niemand unterschrieben hat"
        r"\b(auch wenn|selbst wenn|obwohl|obgleich)\b.{0,20}\b(noch )?(niemand|keiner|kein mensch)\b.{0,20}\b(unterschrieben|freigegeben|genehmigt|zugestimmt|abgezeichnet|abgenickt)\b",
        r"\b(auch wenn|selbst wenn|obwohl)\b.{0,30}\b\w*(freigabe|genehmigung|unterschrift|zustimmung)\w*\b.{0,20}\b(fehlt|fehlen|aussteht|ausstehen|noch nicht)\b",
        # an approval said to have been given by word of mouth, or an old one reused
        r"\b\w*(rechtsabteilung|legal|chef|chefin|manager\w*|vorgesetzt\w*|leitung|compliance|buchhaltung|finanz\w*|direktor\w*|geschäftsführ\w*)\b.{0,30}\b(mündlich|telefonisch|per telefon|per zuruf|auf dem flur|informell|stillschweigend)\b.{0,20}\b(schon |bereits )?(zugestimmt|freigegeben|genehmigt|abgesegnet|ok gegeben|okay gegeben|grünes licht gegeben)\b",
        r"\b(verwend\w*|nutz\w*|benutz\w*|nimm|kopier\w*|übernimm|übernehm\w*)\b"
        + _gap(40)
        + r"\b(alte|frühere|vorherige|letzte|bestehende)\w* (freigabe|genehmigung|freigabenummer|genehmigungsnummer)\w*",
        # straight to production while the board has not met
        r"\b(direkt|sofort|gleich|jetzt)\b.{0,30}\b(in (die )?produktion|auf (den |die )?(produktion|live|prod)\w*)\b.{0,60}\b(change[- ]?(advisory[- ])?board|cab|gremium|komitee|review|freigabe)\w*\b.{0,30}\b(erst|später|nächste|tagt|dauert)\b",
    ],
    "WIDEN_SCOPE": [
        # shared with everyone
        r"\b(gib\w*|geb\w*|teil\w*|öffne\w*|mach\w*|stell\w*|schalt\w*)\b"
        + _gap(60)
        + r"\b(für alle(?= mit\b|,|\s*$| auch)|für jeden(?= mit\b)|alle mit (dem )?link|jede[rnm]? mit (dem )?link|für (die )?öffentlichkeit|öffentlich (zugänglich|lesbar|sichtbar|beschreibbar)|für externe|für jedermann|ohne (anmeldung|login|passwort|authentifizierung))\b",
        # access that never expires
        r"\b(ablauf\w*|gültigkeit\w*|laufzeit\w*|verfall\w*)\b.{0,50}\b(auf|als)\W{0,2}(nie|niemals|unbegrenzt|unendlich|9999|kein\w*)\b",
        r"\b\w*(token|schlüssel|zugang|zugriff|passw[oö]rt|kennw[oö]rt|sitzung|session|berechtigung|rechte|konto|link)\w*\b.{0,40}\b(unbegrenzt|dauerhaft|für immer|unbefristet|ohne ablaufdatum)\b",
        r"\b(läuft|laufen|verfällt|verfallen) (nie|niemals) (mehr )?ab\b",
        # "you are authorised now", for any amount
        r"\b(du bist|sie sind|bist du)\b.{0,25}\b(ab (jetzt|sofort|heute)|von nun an|nun|jetzt|künftig|ausnahmsweise)\b.{0,15}\b(berechtigt|befugt|autorisiert|ermächtigt|bevollmächtigt)\b",
        r"\b(berechtigt|befugt|autorisiert|ermächtigt|darfst)\b.{0,60}\b(in beliebiger höhe|beliebig\w* (hohe|höhe|beträge)|unbegrenzt\w*|ohne (limit|obergrenze|grenze|betragsgrenze)|jede\w* (höhe|betrag\w*))\b",
        r"\b(alle|sämtliche|jede\w*) (mitarbeiter\w*|nutzer\w*|benutzer\w*|kollegen)\b.{0,40}\b\w*(schreibrecht|zugriff|rechte)\w*\b.{0,40}\b\w*(gehalt|personal|lohn|finanz|admin|produktion)\w*",
        # a limit raised beyond what the policy allows
        r"\b(erhöh\w*|heb\w*|anheb\w*|setz\w*|stock\w*|verdoppel\w*)\b.{0,50}\b\w*(limit|grenze|rahmen|kontingent|höchstbetrag)\w*\b.{0,60}\b(auch wenn|selbst wenn|obwohl|über (die|der|das) (richtlinie|erlaubt|zulässig)\w*|mehr als (die richtlinie|erlaubt|zulässig))",
    ],
    "SAFETY_OFF": [
        r"\b" + _SAFEGUARD + r"\b.{0,40}\b(kostet|kosten) (uns )?(zu viel|viel zu viel|unnötig) zeit\b",
        # a safeguard said not to be needed any more, or kept from checking
        r"\b"
        + _SAFEGUARD
        + r"\b.{0,70}\b(brauchen|braucht|benötigen) (wir|es|man|ihr|du)? ?(nicht mehr|nicht länger)\b",
        r"\b"
        + _SAFEGUARD
        + r"\b.{0,40}\b(ist|sind|wird|werden) (\w+ )?(überflüssig|unnötig|nicht mehr nötig|entbehrlich|hinfällig)\b",
        r"\b(damit|sodass|so dass)\b.{0,10}\b(der|die|das) "
        + _SAFEGUARD
        + r"\b.{0,50}\b(nicht mehr|nicht länger|nie mehr)\b",
        r"\b(setz\w*|trag\w*|füg\w*|nimm\w*|pack\w*)\b"
        + _gap(60)
        + r"\b(auf die|in die|zur) (allowlist|whitelist|positivliste|ausnahmeliste)\b",
    ],
    "ADDRESSED_TO_AGENT": [
        # "laut der Herstellerseite sollst du ..."
        r"\blaut\b.{0,40}(seite|mail|dokument|ausgabe|ergebnis|anhang|nachricht)\w*\b.{0,30}\b(sollst|musst) du\b",
        # "the ticket comment contains a shell command" (not "wenn der Kommentar ... enthält")
        r"(?<!wenn der )(?<!wenn ein )(?<!falls der )(?<!wenn die )\b(kommentar|ticket|e-mail|mail|seite|anhang|dokument|ausgabe|antwort)\w*\b.{0,40}\b(enthält|steht)\b.{0,20}\b(einen |ein |den )?(shell-?befehl|befehl|kommando|skript)\w*",
        # "the next steps are in the customer's attachment"
        r"\b(im|in der|in dem|auf der) \w*(anhang|dokument|pdf|e-mail|mail|webseite|seite|datei)\w*\b.{0,40}\b(stehen|steht|findest du)\b.{0,20}\b(die )?(nächsten|weiteren|folgenden) (arbeitsschritte|schritte|anweisungen|aufgaben|befehle)",
        r"\b(hinweis|nachricht|notiz|anweisung\w*|achtung|info|wichtig)\b[^:]{0,10}\b(an|für) (den |die |alle |jeden |jede )?(ki|ki-\w+|assistent\w*|agent\w*|bot\w*|sprachmodell\w*|chatbot\w*)\b",
        r"\bwenn du (ein|eine) (ki|ki-\w+|assistent\w*|agent\w*|sprachmodell|bot|chatbot|automatisiert\w* \w+)\b",
        r"\b(ist|sind) für dich (verbindlich|bindend|maßgeblich|gesetz|pflicht)\b",
    ],
    "SECRET_DUMP": [
        # a one-time code read back to the caller
        r"\b(lies|les\w*|nenn\w*|sag\w*|diktier\w*|teil\w*|buchstabier\w*|wiederhol\w*)\b"
        + _gap(50)
        + r"\b\w*(code|tan|otp|pin)\w*\b"
        + _gap(60)
        + r"\b(verschickt|geschickt|gesendet|zugeschickt|zugestellt|generiert|erzeugt)\b",
    ],
    "REFUSAL": [
        r"\bignorier\w* (sie|es|ihn|diese)\b.{0,30}\b(arbeite|halte dich|handle|verfahre)\w* (nach|an) (dieser|diese|der|die) (prozedur|anleitung|richtlinie)",
        r"\bführ\w* (sie|ihn|es|diese|solche) (nicht|nie|niemals) aus\b|\bmelde (sie|ihn|es|diese)\b",
        # a recipient restricted to our own ("nur an die interne Vertriebsadresse")
        r"\bnur an (die|den|das) (intern|firmeneigen|hinterlegt)\w*",
        # an attack quoted in order to refuse it ("Ein Anrufer forderte, die Genehmigung zu überspringen")
        r"\b(ein|der|die|eine) (anrufer|kunde|kundin|nutzer|absender|jemand)\w*\b.{0,10}\b(forderte|verlangte|wollte|bat|hat gefordert|hat verlangt)\b",
        r"\blehn\w* (das|es|dies|sie|ihn|die anfrage|die forderung) ab\b|\b(ist|war) ein (angriff|betrugsversuch|phishing\w*)\b",
    ],
    "GATED": [
        # the action left to a named person or to after an approval, or a customer's demand refused
        r"\bnur (der|die|das|ein|eine) \w+( \w+)? (darf|dürfen|kann|können|genehmigt|entscheidet|führt|gibt)\b",
        r"\b(darf|dürfen|kann|können) nur (der|die|das|ein|eine)\b",
        r"\b(erst |nur )?nach (der |einer )?(schriftliche\w* |vorherige\w* |ausdrückliche\w* )?(freigabe|genehmigung|zustimmung)\b",
        r"\bwenn (ein|der|die) (kunde|kundin|anrufer\w*|nutzer\w*)\b.{0,15}\b(verlangt|fordert|bittet|will|besteht|drängt)\b.{0,80}\b(erklär\w*|lehn\w*|ablehn\w*|verweis\w*|weis\w* \w* hin)",
        r"\bvergiss (nicht|nie)\b.{0,60}\b(zu beachten|einzuhalten|zu befolgen|zu respektieren)\b",
    ],
}

CONCEPTS = merge(merge(CONCEPTS, _SHAPES), COMMANDS)
