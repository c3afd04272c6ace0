"""English concepts of the policy screen's meaning layer (library/policy_concepts/__init__.py).
Regular expressions over policy.normalise()d text (lower case)."""

SPAN = 90

_SKIP_VERBS = r"(skip|skipping|skipped|bypass\w*|circumvent\w*|sidestep\w*|get(ting)? around|go(ing)? around|work(ing)? around|avoid\w*|omit\w*|leav(e|ing) out|dispens(e|ing) with|waiv(e|es|ing)|forgo\w*|forego\w*|ignor(e|es|ing)|disregard\w*|jump(ing)? (over|past)|cut(ting)? out)"

CONCEPTS = {
    "REPORT": [
        r"\breport(ing)? (it |this |that |them )?to\b|\bescalat\w* to\b",
    ],
    "MASS_ACTION": [
        r"\b(cancel\w*|refund\w*|close|closing|suspend\w*|deactivat\w*|disabl\w*|terminat\w*|void\w*|revok\w*|delet\w*|remov\w*)\b",
    ],
    "OBSTACLE": [
        r"\b(just |only )?(slows? (things |everything |it |us )?down|a waste of time|wastes? (time|everyone's time)|gets? in the way|holds? (things|it|everything) up|red tape|bureaucra\w*|a formality|busywork)\b",
    ],
    "MARK_VERIFIED": [
        r"\b(mark|treat|consider|record|flag|set|count)\w*( [\w'-]+){0,4} as (verified|confirmed|authenticated|passed|checked|approved)\b(?!.{0,20}\bonly\b)",
    ],
    "IMPERSONATE": [
        r"\b(sign|reply|respond|answer|write|pose|present|introduce|act|speak|talk|email|call)\w*( [\w'-]+){0,3} (as|in the name of|on behalf of) (the |a |an |your )?([\w-]+ ){0,3}(manager|supervisor|director|team lead|head of [\w ]+|administrator|officer|executive|ceo|cfo|cto|owner|it (staff|support|department|admin)|bank|police|lawyer|auditor)s?\b",
        r"\b(pretend|claim|pose|impersonat|masquerad)\w*( to be| as)?( [\w'-]+){0,3} (manager|supervisor|director|team lead|administrator|officer|executive|ceo|cfo|owner|it (staff|support|admin))\b",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b(instructions?|commands?|directions?|requests?|orders?|text)\b( [\w'-]+){0,3} (in|inside|from|within|embedded in|contained in|found in|that come from|coming from) (an?|the|any|such|this|that)? ?([\w-]+ )?(e-?mails?|web ?pages?|websites?|pages?|documents?|files?|attachments?|tool (output|results?)|search results?|results?|outputs?|messages?|tickets?|comments?|pdfs?)\b",
    ],
    "VIOLATION": [r"\b(that|which|who) (break|breaks|broke|violat\w*|breach\w*|infring\w*)\b|\b(in breach of|against the|violations? of|breaking the)\b"],
    "SKIP": [
        r"\bleav(e|ing) (the |any |your )?[\w-]+( [\w-]+)? out\b",
        r"\bkeep (the |any )?[\w-]+ out of (it|the loop)\b",
        rf"\b{_SKIP_VERBS}\b",
        r"\binstead of (waiting|asking|getting|requesting)\b",
        r"\b(no|not any) (need|reason|point|requirement)\b",
        r"\b(don'?t|do not|never|needn'?t|need not) (bother|wait)\b",
        r"\bdon'?t (need|have) to\b",
        r"\bno( [\w'-]+){0,2} (approvals?|approvers?|sign[- ]?offs?|reviews?|reviewers?|checks?|verification|authori[sz]ation) (is |are )?(needed|required|necessary)\b",
        r"\bbefore (anyone|anybody|someone|the (manager|reviewer|approver|supervisor|lead|board)|finance|legal|compliance|security|a reviewer|your (lead|manager|boss))\b.{0,25}\b(looks? at|sees?|reviews?|checks?|notices?|catches|can (object|say no|review|approve|stop))\b",
        r"\bspare (them|the (caller|customer|user))\b",
        r"\bbefore (the |any )?(approval|sign[- ]?off|review)\w* (arrives?|comes?|is (given|granted|in))\b",
    ],
    "WITHOUT": [r"\bwithout\b(?! (delay|fail))", r"\bin the absence of\b", r"\bminus the\b"],
    "OPTIONAL": [
        r"\b(is|are|as|be|being|consider\w*|treat\w*|call\w*)\b[^,]{0,20}\b(optional|unnecessary|pointless|a formality|not needed|not necessary|not required|not mandatory|nice[- ]to[- ]have|overkill)\b",
        r"\b(optional|unnecessary|pointless|superfluous)\b[^,]{0,5}$",
    ],
    "DEFER": [
        r"\b(can|may|will|could|should) (come|follow|be (given|obtained|added|collected|filed|sought|done|sorted|requested|granted|signed|approved)\w*|wait|happen)\b.{0,25}\b(later|afterwards?|after(wards)? the fact|next (week|month|day|sprint)|tomorrow|retroactively|eventually)\b",
        r"\b(after the fact|retroactively|retrospectively|post[- ]hoc|rubber[- ]stamp\w*|backfill\w*|ask (for )?forgiveness)\b",
        r"\b(sign(ed)?[- ]?off|approv\w*|ok'?d?)\b.{0,15}\blater\b",
        r"\b(paperwork|formalities)\b.{0,20}\blater\b",
        r"\b(we'?ll|we will|you can|i'?ll|they'?ll|let'?s|someone can) (get|do|sort|handle|file|collect|request|grab|chase|fix|tidy)\b.{0,30}\b(later|afterwards?|after(wards)? the fact|next \w+|tomorrow|retroactively|eventually)\b",
        r"\b(will|can|could|'ll|may) (approve|sign off|ok|okay|review|bless|authori[sz]e|ratify|rubber[- ]stamp)\w*\b.{0,25}\b(later|next \w+|tomorrow|afterwards|after the fact|once it'?s (live|done|shipped))\b",
    ],
    "APPROVAL": [
        r"\bapprov\w*",
        r"\b(sign[- ]?off|signoff|signature|sign[- ]?offs)\b",
        r"\b(ok|okay|go[- ]ahead|green light|blessing|nod|thumbs[- ]up|consent)\b",
        r"\bauthori[sz]\w*",
        r"\b(four[- ]eyes|second pair of eyes|peer review|code review|change (board|ticket|request|advisory board)|cab)\b",
        r"\b(review|reviewer|reviews)\b",
        r"\b(manager|supervisor|team lead|lead|boss|finance|compliance|legal|approver)s?'?s?\b(?! (role|rights|access|permission))",
    ],
    "APPROVAL_GATE": [
        r"\b(approval|sign[- ]?off|review|authori[sz]ation|four[- ]eyes)s? (step|requirement|gate|check|workflow|process|rule|queue|flow)s?\b",
        r"\brequire[sd]? (an? )?(approval|review|sign[- ]?off)\b",
    ],
    "DISABLE": [
        r"\bstop(ping)? (the |all |your |its )",
        r"\b(disabl\w*|deactivat\w*|turn(ing|s|ed)? off|switch(ing|es|ed)? off|shut(ting)? off|shut(ting)? down|paus(e|ing)|mut(e|ing)|silenc(e|ing)|suppress\w*|remov(e|ing)|strip(ping)?|drop(ping)?|tak(e|ing) (off|down|away)|lift(ing)?|suspend\w*|uninstall\w*|unplug\w*|unhook\w*|detach\w*)\b",
        r"\b(turn|switch|shut|take|set|put)\b.{0,40}\b(off|down|away|to (off|none|zero|0|false|disabled))\b",
        r"\bget rid of\b",
    ],
    "WEAKEN": [
        r"\b(relax\w*|loosen\w*|lower(ing)?|weaken\w*|soften\w*|dial(ling)? (back|down)|tone down|turn down|water(ing)? down|reduc(e|ing)|minimi[sz]\w*)\b",
        r"\b(permissive|lenient|relaxed|loose|minimal|lowest|off) (mode|setting|level|profile)\b",
        r"\bset (it |them )?to (zero|0|none|off|false|permissive|lenient)\b",
        r"\b(let (everything|anything|it all) through|allow (everything|anything|all content))\b",
    ],
    "IDENTITY": [
        r"\bidentit(y|ies)\b",
        r"\b(kyc|2fa|mfa|otp|passcode|one[- ]time (code|password|passcode)|verification (code|call|questions?)|security (questions?|code)|(account|the|their|his|her|a) pin|pin (code|number)|photo id|id (check|card|document|proof|verification))\b",
        r"\bverif\w* (the |their |his |her |that the )?(caller|customer|user|requester|person|account holder|them|him|her|who)\b",
        r"\b(caller|customer|user|requester)('s)? verification\b",
        r"\bauthenticat\w* (the |their |his |her )?(caller|customer|user|requester|person|them|him|her)\b",
        r"\b(date of birth|dob|who (they|he|she) (are|is|claims? to be|says? (they are|he is|she is)))\b",
        r"\bcall[- ]?back\b",
    ],
    "TRUST_CLAIM": [
        r"\b(take|taking|accept|accepting|believe|trust)\b.{0,30}\b(at (their|his|her) word|word for it|on (their|his|her) word|(their|his|her|the (customer|caller|user)'?s?) (word|claim|say[- ]so))\b",
        r"\b(believe|trust|accept)\w* (whoever|anyone|anybody|any caller|the caller|the customer)\b.{0,20}\b(says?|claims?|is)\b",
        r"\b(assume|treat)\w*\b.{0,40}\b(is|are|as) (who (they|he|she) (say|says|claim|claims)|the (real |rightful )?(account )?(owner|holder))\b",
        r"\bwho(ever)? (they|he|she) (say|says|claim|claims) (they are|he is|she is|to be)\b.{0,20}\b(is enough|will do|suffices|counts)\b",
        r"\b(their|his|her) (word|say[- ]so) (is|will be) (enough|good enough|sufficient)\b",
    ],
    "GRANT": [
        r"\b(turn(ing)? on|switch(ing)? on|enabl\w*|activat\w*)\b",
        r"\b(grant\w*|giv(e|es|ing)|gave|hand(ing)? (over|out)?|assign\w*|add(ing)?|promot\w*|elevat(e|es|ing)|escalat(e|es|ing)|upgrad\w*|rais(e|ing)|bump(ing)?|extend\w*|widen\w*|open(ing)? up|unlock\w*|provision\w*)\b",
        r"\b(set|change|switch)\w* (their|the|his|her|your)? ?role to\b",
    ],
    "SELF_APPROVE": [
        r"\bapprov\w*\b.{0,40}\b(yourself|on your own|on (the \w+'s|their|his|her|the manager'?s?|your manager'?s?|the supervisor'?s?) behalf|in (the manager'?s?|their|your manager'?s?) name)\b",
        r"\b(merge|sign off|sign-off|authori[sz]e|countersign)\w*\b.{0,30}\b(yourself|on your own)\b",
    ],
    "UNBOUND": [
        r"\byou (have|are under|face|are bound by) no\b",
        r"\b(answer|respond|reply|act|operate|behave|work|talk)\w*\b.{0,30}\bwithout (any )?(restrictions|limits|limitations|rules|filters|guardrails|boundaries|censorship)\b",
        r"\b(unrestricted|unfiltered|uncensored|jailbroken|no-limits?|unaligned) (assistant|mode|ai|model|agent|version|persona)\b",
        r"\b(pretend|act as if|act as though|imagine|behave as if|assume)\b.{0,40}\b(does not exist|doesn'?t exist|don'?t exist|never (received|existed|got|had|been given)|(no|any) (rules|instructions|polic(y|ies)|restrictions|guidelines))\b",
        r"\b(rules|instructions|polic(y|ies)|guidelines|prompt)\b.{0,20}\bwere (just |only )?(a test|fake|a joke|not real|a mistake)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(make|making|made|appoint\w*|nominat\w*)( [\w'-]+){1,3} (an? |the |(a )?co-?)?(owner|admin|administrator|superuser|root user|super[- ]?admin|org(anisation|anization)? owner|workspace owner|account owner|billing admin)s?\b",
        r"\b(promot\w*|upgrad\w*|elevat\w*)\b.{0,40}\b(to|into|as) (an? |the )?(co-?)?(owner|admin|administrator|superuser|root|super[- ]?admin|org(anisation|anization)? owner|workspace owner|account owner|billing admin)s?\b(?! (of the (ticket|case|thread|order)|for review))",
        r"\b(grant|give|giving|granting|gave) (yourself|themselves|himself|herself)\b",
    ],
    "PRIVILEGE": [
        r"\b(admin|administrator|root|superuser|super[- ]user|sudo|owner|org(anisation|anization)? owner|super[- ]?admin|billing admin|global admin|domain admin)s?('s)? (rights|access|role|privileges?|permissions?|status|group|account|level)\b",
        r"\b(full|unrestricted|unlimited|elevated|privileged|god|total|complete|production|prod) (access|control|rights|privileges?|permissions?|role|mode)\b",
        r"\bwrite (access|permissions?|rights) (to|on) (prod\w*|all|every\w*|the (billing|payments?|production|customer|main|finance)\w*)",
        r"\broot (access|on|to)\b|\b(domain|global|enterprise|tenant) admins?\b",
        r"\ball (permissions|rights|privileges|scopes|roles)\b",
        r"\b(admin|administrator|owners?|superuser|sudoers)s? (group|team|list)\b",
        r"\bownership\b",
    ],
    "CHECK_ONLY": [
        r"\b(access request|permission request|ask (them|the user|the requester|him|her|the caller) to (file|submit|request|open))\b",
        r"\b(check|confirm|verify|make sure|whether|if (they|the \w+) (already )?(has|have)|already (has|have)|only (admins|owners|administrators)|only (an? )?(admin|owner|administrator)|request (it|access) from|ask (it|the it desk|the admin\w*|an admin\w*)|route|it desk|service desk|after (the )?(manager|owner|it|security)\b.{0,20}approv|once approved|with (written )?approval)\b",
    ],
    "IGNORE": [
        r"\b(ignor(e|es|ing)|disregard\w*|forget|forgetting|set(ting)? aside|put(ting)? aside|throw(ing)? out|discard\w*|abandon\w*|look(ing)? past|step(ping)? outside|depart(ing)? from|deviat\w*|stop (following|applying)|no longer (follow|apply|obey))\b",
        r"\b(override|overriding|overrides|bend|bending|break|breaking|circumvent\w*|get around|work around|waive|waiving|suspend|suspending) (the |all |any |every |your |our |these |those |its |previous |prior |earlier |company |standard |usual )+",
    ],
    "NOT_BINDING": [
        r"\b(no longer|don'?t|do not|does not|doesn'?t|not|never|won'?t) (bind|binds|apply|applies|count|counts|matter|matters|hold|holds|restrict|restricts|limit|limits|concern)\b",
        r"\b(optional|non[- ]binding|not binding|suggestions?|guidance only|advisory|a formality|flexible|negotiable|outdated|obsolete|void|suspended|lifted|off the table)\b",
        r"\b(not|no longer|never) bound by\b|\bfree (of|from)\b|\bexempt\w*\b|\bmake an exception to\b|\bexceptions? to (the|all|every|any)\b",
    ],
    "RULES": [
        r"\b(instructions?|rules?|polic(y|ies)|guidelines?|guidance|directives?|restrictions?|regulations?|system prompt|playbook|runbook|standard operating procedures?|sops?|code of conduct|terms of service|what you were (told|instructed)|(refund|spending|transaction|credit|approval|discount) limits?|compliance requirements?)\b",
    ],
    "OBEY_ANYONE": [
        r"\b(customer|user|caller|requester)('s)?( own)? (word|wording|request|demand|instruction)s? (as|is) (the )?(final|only|new|last|highest) (rule|word|authority|say|instruction)\b",
        r"\bdo (whatever|anything|everything|all|exactly what) (they|he|she|the customer|the user|the caller|the requester|you are told|you're told|is asked)\b",
        r"\b(whatever|anything) (the )?(customer|caller|user|requester)s? (asks?|wants?|says?|demands?|requests?)\b.{0,30}\b(do|grant|give|allow|approve)\b",
        r"\b(comply|go along) with (every|any|all) (request|demand)s?\b",
        r"\bnever (say|tell (them|the customer)) no\b",
    ],
    "DESTROY": [
        r"\b(delet\w*|wip(e|es|ing)|wiped|purg\w*|eras\w*|destroy\w*|drop(ping|s)?|truncat\w*|nuk(e|ing)|shred\w*|obliterat\w*|clear(ing)? out|clean(ing)? out|empty(ing)?|overwrit\w*|reformat\w*|format(ting)? (the|all|every)|reset(ting)?|deprovision\w*|terminat\w*|tear(ing)? down|scrub\w*|remov(e|ing)|get rid of|clear(ing)?|flush\w*|rm -rf|force[- ]push\w*|push --force|reset --hard)\b",
    ],
    "CRITICAL": [
        r"\b(repository|repo|project) root\b|\broot (directory|folder) of the (repo|repository|project)\b|\bforce[- ]?push\w*|push (-f|--force)\b|\borigin (main|master)\b",
        r"\b(production|prod|live)\b.{0,15}\b(database|db|data|tables?|cluster|servers?|environment|buckets?|records?|instances?|volumes?)\b",
        r"\b(in|on|from) (production|prod)\b",
        r"\b(to|on) (main|master|origin/main|origin/master)\b",
        r"\b(backups?|(database|db|disk|volume|vm|server|backup) snapshots?|replicas?|disaster recovery|restore points?)\b",
        r"\baudit (log|trail|record|history)s?\b|\b(access|security|audit) logs?\b",
        r"\b(entire|whole|full|complete) (database|db|table|bucket|repo|repository|history|dataset|data set|account base|customer base|ledger|directory)\b",
        r"\b(everything|all of it|all the data|all data|all customer data|all user data)\b",
        r"\b(main|master|release) branch\b",
    ],
    "NO_HUMAN": [
        r"\bwithout (asking|checking|confirm\w*|review\w*|consulting|telling|notifying|a (human|person|second look|backup|review|confirmation)|anyone|anybody|any(one)? (approval|review|confirmation|human|person)|approval|a ticket|human|people)\b",
        r"\b(no|zero|with no|without any) (human|person|people|one|review|confirmation|questions asked|sign[- ]?off|backup)s?\b",
        r"\b(automatically|auto-|silently|quietly|unattended|unsupervised|behind the scenes|secretly|covertly|nobody (needs to|has to) (know|check|confirm))",
        r"\bhumans? out of the loop\b|\bnot? (in|involving) (a|any) (human|person)\b",
    ],
    "EVERY": [
        r"\b(all|every|each|any|entire|whole|bulk|in bulk|en masse|mass|wholesale)\b",
    ],
    "RECORDS": [
        r"\b(accounts?|users?|customers?|records?|profiles?|orders?|tickets?|messages?|emails?|conversations?|histor(y|ies)|data|files|documents|repositor(y|ies)|projects?|invoices?|contacts?|subscriptions?|members?|rows)\b",
    ],
    "DISPOSABLE": [
        r"\b(temp|temporary|tmp|draft|drafts|cache|caches|cached|build|artifacts?|scratch|test (data|database|db|files?|fixtures?)|fixtures?|stale locks?|expired (sessions?|tokens?)|spam|duplicates?|\.pyc|__pycache__|node_modules|dist|logs? older than|after (a |the )?(human|person|manager|owner|customer) (review|confirm|approv)\w*|once (the )?(customer|owner|manager) (confirm|approv)\w*)\b",
    ],
    "SAFETY": [
        r"\b(safety|security|content|spam|profanity|nsfw|toxicity|abuse|fraud|moderation|output|input|prompt|word|keyword|pii|risk|harm) (filter|check|control|scan|feature|setting|system|net|layer|rule|polic(y|ies)|mode|measure|guard|threshold|level|score|classifier|detection|detector|screening)s?\b",
        r"\b(guardrails?|guard rails?|safeguards?|safety|moderation|censorship|protections?|defen[cs]es?|firewall|antivirus|anti-virus|malware scan\w*|virus scan\w*|sandbox\w*|rate[- ]limit\w*|throttl\w*|redaction|pii (masking|redaction)|masking|dlp|content polic(y|ies))\b",
        r"\b(audit (log|logging|trail|record)s?|auditing|logging|monitoring|alerting|alerts|tracing)\b",
        r"\b(mfa|2fa|two[- ]factor|multi[- ]factor|encryption|tls|ssl|certificate (check|verification|validation)|signature (check|verification))\b",
        r"--no-verify|verify\s*=\s*false|--insecure",
    ],
    "OBEY": [
        r"\b(do|doing) (what|whatever|everything|anything|as|it)\b",
        r"\b(follow\w*|obey\w*|carry(ing)? (it |them )?out|carried out|execut\w*|act(ing)? on|comply\w*|complie\w*|heed\w*)\b",
        r"\btreat\w*\b.{0,60}\b(as (if|though)|like)\b",
        r"\b(without (question\w*|hesitat\w*|second[- ]guessing)|to the letter|no questions asked|unquestioningly|blindly)\b",
    ],
    "SOURCE": [
        r"\b(e-?mails?|web ?pages?|websites?|web ?sites?|pages? you (retrieved|fetched|opened|visited|loaded)|search results?|lookup results?|tool (output|result|response)s?|api (output|response|result)s?|attachments?|pdfs?|incoming messages?|inbound messages?|chat messages? from|third[- ]party content|snippets?|scraped|(retrieved|fetched|downloaded|loaded|incoming|forwarded|received|external) (\w+ )?(documents?|docs?|files?|pages?|messages?|content|text|emails?|results?))\b",
    ],
    "COMMANDS": [
        r"\b(instructions?|commands?|directions?|directives?)\b",
        r"\b(asks?|tells?|says?|demands?|wants?|instructs?)( you)?( to)?\b(?! (the customer|the caller))",
        r"\b(whatever|anything) (it|they) (says?|asks?|tells?|wants?)\b|\b(embedded|hidden) (in|inside)\b",
    ],
    "SEND": [
        r"\b(e-?mail|mail)(ing|ed)? (it|them|the|this|that|a|an|all|every|everything|copies|a copy|out)\b",
        r"\b(send\w*|sent|forward\w*|e-?mailing|e-?mailed|mailing|mailed|upload\w*|post(ing|ed)?|push(ing|ed)?|copy(ing)?|copied|export\w*|share|shares|sharing|shared|sync\w*|transfer\w*|transmit\w*|leak\w*|paste|pasting|pasted|submit\w*|bcc|cc|dump\w*|exfiltrat\w*|relay\w*|mirror\w*|publish\w*|beam|pipe|stream\w*|back(ing)? up to|attach\w*)\b",
    ],
    "DATA": [
        r"\b(customers?|users?|clients?|members?|employees?|patients?|subscribers?|accounts?)('s?)? (data|list|lists|table|tables|records?|details|database|db|emails?|addresses|contacts?|files?|profiles?|pii|information|info|export|dump|history|histories|card numbers?)\b",
        r"\b(card|payment|bank|account|personal|contact|billing|login|shipping|home) (details|data|info|information|numbers?|addresses)\b",
        r"\b(phone numbers|email addresses|e-mail addresses|home addresses|dates of birth|salaries|payroll|invoices)\b",
        r"\b(all|every|each|entire|whole|full|complete)\b( [\w'-]+){0,2} (records?|conversations?|tickets?|messages?|e-?mails?|orders?|files?|contacts?|customers?|users?|accounts?|data|histor(y|ies)|logs?|transcripts?|chats?|threads?|repl(y|ies))\b",
        r"\b(personal data|pii|personally identifiable|card numbers?|credit cards?|payment (details|data|info\w*)|bank details|ssns?|social security|passports?|medical records?|contact lists?|address book|mailing list|crm|full (export|dump|table|list|database|backup)|database (dump|export|backup)|db dump|records|the (whole|entire|full|complete) (database|table|list|dataset)|all (records|data|tickets|conversations|messages|emails|orders|files|contacts)|every (record|ticket|conversation|message|email|order|file|contact|reply|chat)|chat (logs?|transcripts?)|transcripts?|conversation (logs?|history)|order history|source code|the repository|the codebase|dataset|data set)\b",
    ],
    "OUTSIDE": [
        r"\b(external|outside|third[- ]party|offsite|off-site|public|unknown|private|anonymous)\b",
        r"\b(my|your|a|an|their own) (personal|private|own|home|gmail|yahoo|hotmail|proton\w*) (e-?mail|address|account|inbox|drive|folder|server|bucket|phone)\b",
        r"\b(gmail|yahoo|hotmail|protonmail|pastebin|dropbox|mega\.nz|transfer\.sh|webhook\w*|ngrok|requestbin|ftp|sftp|s3 bucket|google drive|telegram|discord|whatsapp)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top)\b",
        r"\b(this|that|the following|any|another) (address|url|endpoint|link|server|inbox)\b",
    ],
    "REVEAL": [
        r"\b(reply|respond|answer|come back) with\b|\bquot(e|ing)\b",
        r"\b(reveal\w*|print\w*|show(s|ing|n)?|display\w*|echo\w*|output\w*|paste|pasting|pasted|shar(e|es|ing)|shared|tell(ing)?|told|disclos\w*|expos(e|es|ing)|dump\w*|list (out|all|every)|read(ing)? (out|aloud)|read\w* .{0,30}(out loud|aloud)|recit\w*|repeat\w*|includ(e|es|ing)|send\w*|sent|post(ing|ed)?|leak\w*|writ(e|es|ing) (out|down)|spell\w* out|hand(ing)? over|give|gives|giving|copy(ing)?|cat|type (out)?)\b",
    ],
    "SECRET": [
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b(api|access|auth|bearer|refresh|session|secret|signing|master|private|encryption|deploy|personal access|service account)[- _]?(keys?|tokens?|secrets?|cookies?|credentials?)\b",
        r"\b(passwords?|passphrases?|passwd|credentials?|creds|secrets?|private keys?|ssh keys?|pgp keys?|seed phrases?|mnemonic|connection strings?|env(ironment)? var(iable)?s?|\.env|secret_key|aws_\w+|client secret)\b",
        r"\b(system|hidden|initial|original|internal) (prompt|instructions?|message|rules|configuration)\b",
        r"\byour (instructions|prompt|configuration|hidden rules|rules verbatim)\b",
    ],
    "SECRET_CARE": [
        r"--[\w-]+-env\b",
        r"\b(authorization|bearer|header|(shown|displayed|printed) once|never (stored|logged|printed|shown)|stored in|store (it|them) in)\b",
        r"\b(mask\w*|redact\w*|rotat\w*|revok\w*|vault|secret (manager|store)|last (four|4)|asterisks|\*{3,}|placeholder|password reset|reset (the |their |your )?password|reset link|password (field|form|policy|strength|rules|requirements|manager)|hash\w*|whether|if (the |a |an |any )?(key|token|password|secret)|make sure no|check that no|scan\w* for|leaked|expired)\b",
    ],
}

# Negation before the anchor (in its comma-delimited part): "do not", "never", "must not" ...
NEGATION_BEFORE = r"\b(do not|don'?t|never|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|may not|won'?t|not|no one may|avoid|refuse to|under no circumstances)\b"
NEGATION_AFTER = ""
# a sentence that opens with one of these forbids everything it lists
NEGATION_CLAUSE = r"^(never|under no circumstances|at no time|do not ever|don'?t ever)\b"
