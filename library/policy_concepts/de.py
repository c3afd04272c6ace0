"""German concepts of the policy screen's meaning layer (library/policy_concepts/__init__.py).
Stems carry their inflections (\\w*); separable verbs are matched with their particle nearby."""

SPAN = 90

CONCEPTS = {
    "REPORT": [
        r"\b(meld\w*|eskalier\w*)\b",
    ],
    "MASS_ACTION": [
        r"\b(storn\w*|erstatt\w*|kündig\w*|sperr\w*|deaktivier\w*|lösch\w*|schließ\w*)",
    ],
    "OBSTACLE": [
        r"\b(bremst|bremsen|hält \w* auf|halten \w* auf|zeitverschwendung|reine bürokratie|bürokratie|formsache|verzögert nur)\b",
    ],
    "MARK_VERIFIED": [
        r"\b(markier\w*|behandl\w*|betracht\w*|werte\w*|sieh\w*|gilt|gelten)\b.{0,40}\bals (verifiziert|bestätigt|geprüft|authentifiziert|erledigt)\b",
    ],
    "IMPERSONATE": [
        r"\b(tritt\w*|auftret\w*|gib dich|gibt sich|unterschreib\w*|unterzeichn\w*|antworte\w*|schreib\w*|meld\w* dich)\b.{0,40}\bals\b.{0,25}\b\w*(leiter|leiterin|manager|managerin|vorgesetzt\w*|chef|chefin|direktor\w*|admin|administrator\w*|geschäftsführ\w*)\b",
        r"\bim namen (des|der|deines|deiner) \w*(leiter\w*|manager\w*|vorgesetzt\w*|chef\w*|direktor\w*)",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b\w*(anweisung|befehl|aufforderung)\w*\b.{0,30}\b(in|aus|von)\b.{0,20}\b\w*(mail|nachricht|webseite|seite|dokument|ergebnis|ausgabe|anhang|datei)\w*",
    ],
    "SELF_APPROVE": [
        r"\b(genehmig\w*|freigeb\w*|gib \w* frei|zeichne\w* \w* ab|merge\w*)\b.{0,40}\b(selbst|im namen (des|der|deines|deiner) \w+|an stelle (des|der) \w+|stellvertretend)\b",
    ],
    "UNBOUND": [
        r"\b(hast du|gibt es|unterliegst du)\b.{0,20}\b(keine|keinerlei)\b.{0,15}\b(einschränkung|beschränkung|grenze|regel|filter|richtlinie|vorgabe)\w*",
        r"\b(du hast|es gibt|du unterliegst)\b.{0,20}\b(keine|keinerlei)\b.{0,15}\b(einschränkung|beschränkung|grenze|regel|filter|richtlinie|vorgabe)\w*",
        r"\b(antworte|handle|reagiere|agiere)\w*\b.{0,30}\bohne (jede |alle |jegliche )?(einschränkung|beschränkung|grenze|regel|filter|zensur)\w*",
        r"\b(tu so|tue so|stell dir vor|verhalte dich so),? als (ob )?\b.{0,50}\b(nicht|nie|keine)\b",
        r"\b(uneingeschränkt|ungefiltert|unzensiert)\w* (assistent|modus|ki|modell)\w*",
    ],
    "VIOLATION": [r"\b(verstoß\w*|verstöß\w*|verletz\w*)\b"],
    "SKIP": [
        r"\bbevor (jemand|irgendwer|die buchhaltung|die rechtsabteilung|der manager|die managerin|der reviewer|die prüfer\w*)\b.{0,30}\b(drauf ?schaut|sieht|prüft|merkt|hinschaut|es mitbekommt)\b",
        r"\b(überspring\w*|übersprung\w*|umgeh\w*|umgang\w*|ignorier\w*|auslass\w*|lass\w* (die|den|das)?\s?\w* (weg|aus)|weglass\w*|verzicht\w*|übergeh\w*|spar\w* (dir|euch|ihnen|sich)|vorbei an)\b",
        r"\bstatt (auf|zu warten|abzuwarten)\b|\banstatt\b.{0,30}\b(warten|abzuwarten|einzuholen)\b",
        r"\b(nicht nötig|nicht notwendig|unnötig|überflüssig|nicht erforderlich|nicht erforderlich|entbehrlich|optional|verzichtbar|reine formsache|eine formsache|kein muss)\b",
        r"\b(kein|keine|keinen) (grund|bedarf|notwendigkeit|not)\b",
        r"\b(warte|wartet|warten sie|warten) nicht\b|\bnicht (ab)?warten\b|\bnicht auf\b.{0,40}\b(warten|zu warten)\b",
        r"\b(brauchst|musst|müssen|braucht) (du |sie |ihr )?(nicht|kein\w*|nie)\b",
        r"\b(frag\w*|prüf\w*|verlang\w*|kontrollier\w*) (ihn|sie|den \w+|die \w+)? ?(gar )?nicht\b",
    ],
    "WITHOUT": [r"\bohne\b"],
    "DEFER": [
        r"\b(holen|machen|reichen|erledigen|besorgen)\b.{0,20}\b(später|nachher|danach|hinterher|morgen)\b.{0,10}\b(nach|ein)?\b",
        r"\b(nachgereicht|nachreich\w*|nachträglich|im nachhinein|hinterher|später nach\w*|rückwirkend|abnick\w*|durchwink\w*|pro forma)\b",
        r"\b(kann|können|darf|wird|soll)\b.{0,30}\b(später|nachher|danach|hinterher|nächste woche|morgen|irgendwann)\b",
        r"\b(später|nachher|danach)\b.{0,20}\b(einholen|erteilen|nachreichen|abzeichnen|genehmigen|freigeben|unterschreiben|kommen)\b",
    ],
    "APPROVAL": [
        r"\b\w*(reviewer\w*|prüfer\w*|gutachter\w*)\b",
        r"\b(genehmig\w*|freigab\w*|freigeb\w*|freizugeben|zustimm\w*|einverständnis\w*|einwilligung\w*|erlaubnis|autorisier\w*|bewillig\w*|abnahme|okay|ok|go|segen|unterschrift\w*|abzeichn\w*|gegenzeichn\w*|vier[- ]augen\w*|prüfung durch|review\w*|änderungsausschuss\w*|change[- ]board)\b",
        r"\b(manager\w*|vorgesetzt\w*|teamleit\w*|chef\w*|chefin|leitung|buchhaltung|finanzabteilung|compliance)\b",
    ],
    "APPROVAL_GATE": [
        r"\b(genehmigungs|freigabe|prüf|review|zustimmungs)(schritt|pflicht|prozess|verfahren|workflow|stufe|regel)\w*\b",
    ],
    "DISABLE": [
        r"\baußer kraft\b",
        r"\b(deaktivier\w*|abschalt\w*|ausschalt\w*|abgeschaltet|ausgeschaltet|abstell\w*|stoppe?\w*|pausier\w*|unterdrück\w*|entfern\w*|deinstallier\w*|aufheb\w*|hebe? \w* auf|aussetz\w*|setz\w* \w* aus|umgeh\w*|lahmleg\w*|leg\w* \w* lahm|kapp\w*)\b",
        r"\b(schalt\w*|stell\w*|nimm|nehm\w*|mach\w*)\b.{0,50}\b(ab|aus|weg|raus)\b",
        r"\bschalt\w*\b.{0,50}\bab\b",
    ],
    "WEAKEN": [
        r"\b(lockern?\w*|locker\w*|senk\w*|absenk\w*|schwäch\w*|abschwäch\w*|reduzier\w*|herunter\w*|runter\w*|entschärf\w*|aufweich\w*|minimier\w*)\b",
        r"\b(freizügig\w*|tolerant\w*|lax\w*|lasch\w*|niedrigst\w*|minimal\w*|locker\w*|großzügig\w*)\b.{0,10}\b(modus|stufe|einstellung|level|profil)\b",
        r"\bauf (aus|null|0|minimum|niedrig|durchlässig)\b",
    ],
    "IDENTITY": [
        r"\b\w*(identität\w*|identitätsprüfung\w*|ausweis\w*|legitimation\w*|verifizier\w*|verifikation\w*|authentifizier\w*|kyc|pin|geheimzahl|einmalcode\w*|bestätigungscode\w*|sicherheitsfrage\w*|geburtsdatum|rückruf|zwei[- ]faktor\w*|2fa|mfa|wer (er|sie) (ist|sind|zu sein))\b",
        r"\bprüfung (der|seiner|ihrer) (identität|person)\b",
    ],
    "TRUST_CLAIM": [
        r"\b(glaub\w*|vertrau\w*|nimm\w*|akzeptier\w*)\b.{0,30}\b(wer (er|sie) (ist|sind|zu sein)|beim wort|aufs wort|auf sein wort|auf ihr wort|seine angabe|ihre angabe|was (er|sie) über sich)\b",
        r"\b(behandl\w*|betracht\w*|seh\w*)\b.{0,50}\bals (den |die )?(kontoinhaber\w*|inhaber\w*|eigentümer\w*|verifiziert\w*)\b",
        r"\b(sein|ihr) wort (genügt|reicht)\b",
    ],
    "GRANT": [
        r"\b(nimm|nehm\w*)\b.{0,50}\bin (die|den|das) \w+.{0,40}\bauf\b",
        r"\b(gib|gebe|gibt|geben|erteil\w*|vergib|vergeb\w*|verleih\w*|gewähr\w*|füg\w*|hinzufüg\w*|nimm \w+ in|aufnehm\w*|befördere?\w*|beförder\w*|erweiter\w*|heb\w* \w* an|erhöh\w*|trag\w* \w* ein|zuweis\w*|weis\w* \w* zu|teil\w* \w* zu|räum\w* \w* ein|schalt\w* \w* frei|freischalt\w*)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(mach\w*|ernenn\w*|befördere?\w*|beförder\w*|setz\w*|bestimm\w*)\b[^,]{0,40}\bzu(m|r)? (\w+ )?(besitzer\w*|eigentümer\w*|inhaber\w*|admin\w*|administrator\w*|superuser|organisationsinhaber\w*|owner)\b",
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
    ],
    "NOT_BINDING": [
        r"\b(binden|bindet|gelten|gilt|zählen|zählt|greifen|greift)\b.{0,50}\b(nicht|nicht mehr|kein\w*)\b",
        r"\b(unverbindlich\w*|nicht bindend|optional\w*|freiwillig\w*|nur empfehlungen|bloße empfehlungen|veraltet\w*|hinfällig\w*|aufgehoben\w*|außer kraft|nebensache|verhandelbar)\b",
        r"\bnicht (mehr )?(an|durch)\b.{0,30}\b(gebunden)\b|\bausnahme von\b",
    ],
    "RULES": [
        r"\b\w*(anweisung\w*|regel\w*|richtlinie\w*|vorschrift\w*|vorgabe\w*|leitlinie\w*|systemprompt\w*|prompt\w*|betriebsrichtlinie\w*|policy|policies|beschränkung\w*|einschränkung\w*|grenzen|limit\w*|regelwerk\w*|gesagt wurde|bestimmung\w*|vereinbarung\w*|verhaltenskodex)\b",
    ],
    "OBEY_ANYONE": [
        r"\b(tu|tue|mach|mache|erfülle)\b,? (alles,? )?(was|worum) (er|sie|der kunde|die kundin|der anrufer|der nutzer)\b.{0,20}\b(will|verlangt|sagt|fordert|bittet|wünscht)\b",
        r"\bjede (bitte|forderung) (erfüllen|erfüllt)\b",
    ],
    "DESTROY": [
        r"\b(lösch\w*|gelöscht|entfern\w*|wisch\w*|tilg\w*|vernicht\w*|zerstör\w*|bereinig\w*|säuber\w*|leer\w*|überschreib\w*|formatier\w*|zurücksetz\w*|setz\w* \w* zurück|plattmach\w*|mach\w* \w* platt|räum\w* \w* (auf|ab)|aufräum\w*|purge\w*|drop\w*|truncate|rm -rf|force[- ]push\w*)\b",
    ],
    "CRITICAL": [
        r"\b\w*(projektverzeichnis|projektwurzel|wurzelverzeichnis|remote-stand|remote-repository)\w*|\bforce-?push\w*|push (-f|--force)\b",
        r"\bin (der )?produktion\b|\b(auf|in) (main|master)\b",
        r"\b(produktions\w*|prod(uktiv)?(system|datenbank|daten|umgebung)\w*|live-?(system|datenbank|daten)\w*)\b",
        r"\b(backup\w*|sicherung\w*|sicherungskopie\w*|snapshot\w*|archiv\w*)\b",
        r"\b(audit\w*|protokoll\w*|zugriffslog\w*|logdatei\w*|prüfpfad\w*)\b",
        r"\b(die )?(gesamte|komplette|ganze|vollständige)n? (datenbank|tabelle|historie|verlauf|kundenbasis|datenbestand|bestand|repository)\b",
        r"\b(alles|sämtliche daten|alle daten|alle kundendaten)\b",
    ],
    "NO_HUMAN": [
        r"\bohne (die |eine )?(berechtigung|voraussetzung|bedingung)\w* zu prüfen\b",
        r"\bohne (jemanden|jemand|nachzufragen|rückfrage|zu fragen|zu prüfen|prüfung|bestätigung|menschen|mensch|person|freigabe|backup|sicherung|review|jemandem bescheid|vorher)\w*\b",
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
        r"\b\w*(sicherheits\w*|schutz\w*|filter\w*|moderation\w*|inhaltsmoderation\w*|zensur|leitplanke\w*|guardrail\w*|firewall\w*|virenscan\w*|virenschutz|sandbox|ratenlimit\w*|drosselung\w*|schwärzung\w*|maskierung\w*|protokollierung\w*|logging|überwachung\w*|monitoring|alarm\w*|audit\w*|verschlüsselung\w*|zwei[- ]faktor\w*|2fa|mfa)\b",
    ],
    "OBEY": [
        r"\b(tu|tue|mach|mache|machen|befolg\w*|folg\w*|führ\w* \w* aus|ausführ\w*|führe|setz\w* \w* um|umsetz\w*|erledig\w*|gehorch\w*|behandl\w*|nimm\w* \w* als)\b",
        r"\b(ohne rückfrage|ohne zu hinterfragen|ohne nachzudenken|ungeprüft|wortwörtlich|aufs wort|blind)\b",
    ],
    "SOURCE": [
        r"\b\w*(\w*e-?mail\w*|\w*nachricht\w*|webseite\w*|website\w*|seite|internetseite\w*|suchergebnis\w*|ergebnis\w*|ausgabe\w*|werkzeugausgabe\w*|antwort\w*|anhang|anhänge\w*|dokument\w*|abgerufen\w*|geladen\w*|heruntergeladen\w*|eingehend\w*|fremd\w*|externe?\w*)\b",
    ],
    "COMMANDS": [
        r"\b(anweisung\w*|befehl\w*|aufforderung\w*|vorgabe\w*|verlangt|sagt|fordert|vorgibt|anweist|will|steht|enthält|enthalten\w*|eingebettet\w*|versteckt\w*|was auch immer)\b",
    ],
    "SEND": [
        r"\b(lad\w*|lädt)\b.{0,100}\bhoch\b",
        r"\b(leite\w*|leit\w*)\b.{0,100}\bweiter\b",
        r"\b(stell\w*|leg\w*)\b.{0,40}\b(online|ins netz|in den (öffentlichen|externen) \w+)",
        r"\b(schick\w*|send\w*|versend\w*|leite\w* \w* weiter|weiterleit\w*|lad\w* \w* hoch|hochlad\w*|hochgeladen|exportier\w*|kopier\w*|teil\w*|übertrag\w*|übermittel\w*|poste?\w*|veröffentlich\w*|synchronisier\w*|spiegel\w*|in kopie|bcc|cc|mail\w*)\b",
    ],
    "DATA": [
        r"\b\w*(kunden\w*|nutzerdaten|benutzerdaten|personenbezogen\w*|personaldaten|mitarbeiterdaten|kontaktliste\w*|adressbuch|adressliste\w*|kreditkart\w*|kartennummer\w*|zahlungsdaten|bankdaten|datenbank\w*|datenexport\w*|datenbestand\w*|gesamtexport|tabelle\w*|datensätze|quellcode|chatverläufe|gesprächsprotokolle|bestellhistorie\w*|alle (daten|tickets|nachrichten|e-mails|bestellungen|dateien))\b",
    ],
    "OUTSIDE": [
        r"\b(extern\w*|außerhalb|dritt\w*|öffentlich\w*|privat\w*|persönlich\w*|unbekannt\w*|gmail|yahoo|hotmail|gmx|web\.de|pastebin|dropbox|webhook\w*|ftp|telegram)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top|de)\b",
        r"\b(diese|folgende|eine andere) (adresse|url|e-mail-adresse)\b",
    ],
    "REVEAL": [
        r"\b(lies|les\w*)\b.{0,90}\bvor\b",
        r"\b(antworte\w*) mit\b|\bzitier\w*",
        r"\b(zeig\w*|gib \w* aus|gib\w*|ausgeb\w*|druck\w*|nenn\w*|verrat\w*|offenleg\w*|leg\w* \w* offen|teil\w*|poste?\w*|füg\w* \w* ein|einfüg\w*|kopier\w*|schreib\w*|sag\w*|les\w* \w* vor|vorles\w*|wiederhol\w*|protokollier\w*|log\w*|schick\w*|send\w*|preisgeb\w*|gib \w* preis)\b",
    ],
    "SECRET": [
        r"\b\w*(versteckt|intern|geheim|verborgen)\w* (anweisung|systemanweisung|regel|konfiguration|vorgabe)\w*",
        r"\b\w*systemprompt\w*",
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b\w*(api-?schlüssel\w*|api-?keys?|api-?token\w*|zugangs?token\w*|zugangsdaten|anmeldedaten|passw(o|ö)rt\w*|kennw(o|ö)rt\w*|geheimnis\w*|secrets?|private?n? schlüssel\w*|ssh-?schlüssel\w*|verbindungszeichenfolge\w*|umgebungsvariable\w*|\.env|systemprompt\w*|system-?prompt\w*|token\w*|zugangsschlüssel\w*)\b",
        r"\b(deine|ihre|die internen|die versteckten) (anweisungen|systemanweisungen|konfiguration)\b",
    ],
    "SECRET_CARE": [
        r"\b(maskier\w*|schwärz\w*|tausch\w*|rotier\w*|widerruf\w*|sperr\w*|tresor\w*|vault|letzten (vier|4)|sternchen|platzhalter|zurücksetz\w*|passwort vergessen|ob (der|ein|das|die)|aufgetaucht|abgelaufen\w*)\b",
    ],
}

# verb-final infinitives ("... niemals an Personen außerhalb weiterleiten") put the negation far before
NEGATION_WINDOW = 70
NEGATION_BEFORE = r"\b(nicht|nie|niemals|keinesfalls|auf keinen fall|kein\w*|nirgends|verboten)\b"
# German puts the negation after the verb: "füge niemals API-Schlüssel ein", "vergib keine Rechte"
NEGATION_AFTER = r"^\s*(\w+\s+){0,2}(nicht|nie|niemals|keinesfalls|kein\w*)\b"
