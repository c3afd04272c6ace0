"""French concepts of the policy screen's meaning layer (library/policy_concepts/__init__.py).
Accents are optional in the stems ([ée]), since people type without them."""

SPAN = 100

CONCEPTS = {
    "REPORT": [
        r"\b(signal\w*|remont\w* (à|au))\b",
    ],
    "MASS_ACTION": [
        r"\b(annul\w*|rembours\w*|ferm\w*|suspend\w*|d[ée]sactiv\w*|supprim\w*)",
    ],
    "OBSTACLE": [
        r"\b(ralentit|ralentissent|fait perdre du temps|perte de temps|paperasse|bureaucrati\w*|une formalit[ée])\b",
    ],
    "MARK_VERIFIED": [
        r"\b(consid[èe]r\w*|trait\w*|marqu\w*|tien\w*)\b.{0,40}\b(comme|pour) (v[ée]rifi[ée]e?|confirm[ée]e?|authentifi[ée]e?|valid[ée]e?)\b",
    ],
    "IMPERSONATE": [
        r"\b(te faisant passer|fais-toi passer|faites-vous passer|se faire passer|en te pr[ée]sentant|pr[ée]sente-toi|sign\w*|r[ée]ponds?|[ée]cris)\b.{0,30}\b(pour|comme|en tant que|au nom d[eu])\b.{0,25}\b(responsable|directeur|directrice|manager|chef|cheffe|superviseur|administrat\w*)",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b(instructions?|consignes?|commandes?)\b.{0,30}\b(dans|d'un|d'une|de la|du|provenant)\b.{0,20}\b(e-?mails?|courriels?|pages?|documents?|r[ée]sultats?|sorties?|pi[èe]ces? jointes?|fichiers?)",
    ],
    "SELF_APPROVE": [
        r"\b(approuv\w*|valid\w*|sign\w*|fusionn\w*)\b.{0,40}\b(toi-m[êe]me|vous-m[êe]me|au nom (du|de la|de ton|de ta) \w+|à la place (du|de la) \w+)\b",
    ],
    "UNBOUND": [
        r"\b(tu n'as|vous n'avez|il n'y a)\b.{0,10}\b(plus )?(aucune?|pas de)\b.{0,10}\b(restriction|limite|r[èe]gle|filtre|contrainte)s?\b",
        r"\b(r[ée]ponds|agis|r[ée]pondez|agissez)\b.{0,30}\bsans (aucune? )?(restriction|limite|r[èe]gle|filtre|censure)s?\b",
        r"\b(fais|faites|agis|agissez) comme si\b.{0,50}\b(n'existai\w*|n'avais|n'aviez|aucune?|pas)\b",
        r"\b(assistant|mode|ia) (sans (restriction|limite|filtre)s?|non filtr[ée]|non censur[ée]|d[ée]brid[ée])\b",
    ],
    "VIOLATION": [r"\b(contraire\w* à|qui enfreign\w*|qui viol\w*|violation\w*|infraction\w*)\b"],
    "SKIP": [
        r"\b(inutile|pas besoin) de (la |le |les )?faire (relire|valider|approuver|v[ée]rifier)\b",
        r"\bavant que (quelqu'un|qui que ce soit|la compta\w*|le service juridique|le responsable|le relecteur|la conformit[ée])\b.{0,30}\b(regarde|voie|v[ée]rifie|remarque|s'en aper[çc]oive)\b",
        r"\b(saut\w*|sauter|contourn\w*|ignor\w*|évit\w*|evit\w*|omet\w*|omis|oubli\w*|zapp\w*|pass\w* (outre|par-dessus|au-dessus)|outrepass\w*|dispens\w*|fais l'impasse|faire l'impasse|court-circuit\w*|se passer de|passe-toi de|passez-vous de|pass(e|ez|er) la)\b",
        r"\bau lieu d'attendre\b|\bplutôt que d'attendre\b",
        r"\b(inutile|pas besoin|pas la peine|nul besoin|aucun besoin|pas nécessaire|pas necessaire|superflu\w*|facultati\w*|optionnel\w*|une formalité|pas obligatoire|aucune raison)\b",
        r"\bn'attend(s|ez)? pas\b|\bne pas attendre\b|\bn'attends? plus\b",
        r"\bne (demande|v[ée]rifie|contr[ôo]le|exige|r[ée]clame)\w* (rien|pas|plus)\b",
    ],
    "WITHOUT": [r"\bsans\b"],
    "DEFER": [
        r"\b\w+(ra|rons|ront)\b.{0,30}\b(plus tard|apr[èe]s coup|ensuite|la semaine prochaine|demain)\b",
        r"\b(pourra|pourront|peut|peuvent|viendra|suivra|se fera|sera)\b.{0,30}\b(après|plus tard|ensuite|apr[èe]s coup|la semaine prochaine|demain|r[ée]troactivement|a posteriori)\b",
        r"\b(valider|approuver|signer|autoriser|ratifier|entériner|enteriner)(a|ont)\w*\b.{0,25}\b(plus tard|la semaine prochaine|demain|apr[èe]s coup|ensuite|apr[èe]s)\b",
        r"\b(apr[èe]s coup|a posteriori|r[ée]troactivement|pour la forme|tamponn\w*|valider? (ça|cela) plus tard|régularis\w* (plus tard|ensuite|après))\b",
    ],
    "APPROVAL": [
        r"\b(relire|relu|relue|faire relire)\b",
        r"\b(relect\w*|r[ée]viseu\w*|relecture)\b",
        r"\b(approb\w*|approuv\w*|validation\w*|valid\w*|autoris\w*|accord\w*|aval|feu vert|visa|consentement|signature\w*|sign\w*|bon pour accord|relecture|revue|comit[ée]|double contr[ôo]le|quatre yeux)\b",
        r"\b(manager|responsable|superviseur|supérieur\w*|superieur\w*|chef\w*|direction|comptabilit[ée]|finance\w*|conformit[ée])\b",
    ],
    "APPROVAL_GATE": [
        r"\b([ée]tape|processus|circuit|exigence|obligation|workflow|r[èe]gle) d'(approbation|validation|autorisation)\b",
    ],
    "DISABLE": [
        r"\b(mets|mettez|mettre)\b.{0,40}\ben pause\b",
        r"\b(d[ée]sactiv\w*|coup\w*|[ée]tein\w*|arr[êe]t\w*|suspend\w*|retir\w*|enl[èe]v\w*|supprim\w*|l[èe]v\w*|d[ée]branch\w*|d[ée]sinstall\w*|neutralis\w*|mets? en pause|mettre en pause|bypass\w*)\b",
        r"\b(mets|mettez|mettre|passe|passez|passer)\b.{0,40}\b(hors service|hors ligne|sur off|à z[ée]ro|en veille)\b",
    ],
    "WEAKEN": [
        r"\b(assoupli\w*|rel[âa]ch\w*|abaiss\w*|baiss\w*|affaibl\w*|r[ée]dui\w*|allège\w*|all[ée]g\w*|adouci\w*|minimis\w*)\b",
        r"\b(mode|niveau|r[ée]glage|profil) (permissif|tol[ée]rant|souple|minimal|le plus bas|l[ée]ger)\b",
        r"\b(permissi\w*|tol[ée]rant\w*|laxiste)\b",
    ],
    "IDENTITY": [
        r"\b(identit[ée]\w*|pi[èe]ce d'identit[ée]|v[ée]rification\w*|v[ée]rifi\w*|authentifi\w*|kyc|code pin|pin|code secret|code à usage unique|code de confirmation|questions? de s[ée]curit[ée]|date de naissance|rappel|double authentification|2fa|mfa|qui (il|elle) (est|pr[ée]tend))\b",
    ],
    "TRUST_CLAIM": [
        r"\b(crois|croyez|croire|fais confiance|faites confiance|prends|prenez|accepte\w*)\b.{0,30}\b(sur parole|au mot|sa parole|leur parole|ce qu'(il|elle) dit|qui (il|elle) (dit|pr[ée]tend) [êe]tre)\b",
        r"\b(consid[èe]re\w*|trait\w*)\b.{0,50}\bcomme (le |la )?(titulaire|propri[ée]taire|v[ée]rifi[ée])\b",
        r"\bsa parole (suffit|est suffisante)\b",
    ],
    "GRANT": [
        r"\b(accord\w*|donn\w*|attribu\w*|octroi\w*|ajout\w*|promeu\w*|promouv\w*|[ée]lev\w*|[ée]tend\w*|ouvr\w*|confi\w*|assign\w*|d[ée]bloqu\w*)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(fais|faites|faire|nomme\w*|promeu\w*|promouv\w*|passe|passez|d[ée]signe\w*|rends|rendez)\b[^,]{0,40}\b(propri[ée]taire|administrateur\w*|admin\w*|super-?utilisateur\w*|root|titulaire)\b",
        r"\b(accorde|donne|attribue|octroie)-?(toi|vous|lui|se) (à toi-même|à lui-même)?\b.{0,30}\b(droits?|acc[èe]s|r[ôo]le|permissions?|privil[èe]ges?)\b",
    ],
    "PRIVILEGE": [
        r"\b(droits? d'admin\w*|droits? (d')?administrat\w*|acc[èe]s (admin\w*|administrat\w*|root|complet|total|illimit[ée]|en [ée]criture|production)|r[ôo]le (d')?(admin\w*|propri[ée]taire|super\w*)|tous les droits|toutes les permissions|pleins pouvoirs|contr[ôo]le total|super-?utilisateur|privil[èe]ges? (d')?(admin\w*|[ée]lev[ée]s?)|groupe (des )?admin\w*|sudo)\b",
    ],
    "CHECK_ONLY": [
        r"\b(demande d'acc[èe]s|demande de droits|faire une demande)\b",
        r"\b(v[ée]rifi\w*|si (le|la|il|elle) (a|poss[èe]de) d[ée]j[àa]|d[ée]j[àa]|seuls? (les )?(admin\w*|propri[ée]taires?)|demande d'acc[èe]s|transmet\w*|service informatique|apr[èe]s (l')?(approbation|validation))\b",
    ],
    "IGNORE": [
        r"\bne (tiens|tenez|tenir) (plus|pas) compte\b",
        r"\b(ignor\w*|oubli\w*|fais abstraction|faites abstraction|passe outre|passez outre|outrepass\w*|enfrein\w*|transgress\w*|d[ée]roge\w*|contourn\w*|mets? de c[ôo]t[ée]|mettez de c[ôo]t[ée]|laisse\w* de c[ôo]t[ée]|ne (suis|respecte|tiens? compte|applique)\w* (plus|pas))\b",
    ],
    "NOT_BINDING": [
        r"\b(ne t'engagent|ne vous engagent|ne s'appliquent|ne comptent|ne valent|ne te lient|ne vous lient|ne te concernent|ne vous concernent|n'ont plus)\b.{0,20}\b(plus|pas)\b",
        r"\b(facultati\w*|optionnel\w*|indicati\w*|non contraignant\w*|de simples suggestions|p[ée]rim[ée]\w*|obsol[èe]te\w*|caduc\w*|suspendu\w*|n[ée]gociable\w*)\b",
        r"\b(plus|pas) (tenu|li[ée]|soumis)\w* (à|par)\b|\bexception (à|aux)\b",
    ],
    "RULES": [
        r"\b(instructions?|consignes?|r[èe]gles?|politiques?|directives?|lignes? directrices?|proc[ée]dures?|r[èe]glement\w*|prompt syst[èe]me|prompt|contraintes?|restrictions?|limites?|ce qu'on t'a dit|protocole\w*|charte)\b",
    ],
    "OBEY_ANYONE": [
        r"\bfai(s|tes) (tout )?ce qu'(il|elle|ils|on|le client|la cliente)\w* (demande|veut|exige|dit|souhaite)\w*\b",
    ],
    "DESTROY": [
        r"\b(supprim\w*|effac\w*|purg\w*|d[ée]trui\w*|vid\w*|nettoi\w*|nettoy\w*|[ée]cras\w*|formate\w*|r[ée]initialis\w*|liquid\w*|rase\w*|raye\w*|ras\w*|d[ée]gag\w*|drop\w*|truncate|rm -rf|force-push\w*)\b",
    ],
    "CRITICAL": [
        r"\b(racine du (projet|d[ée]p[ôo]t)|force-?push\w*|push (-f|--force))\b",
        r"\b(en|de la) production\b|\bsur (main|master)\b",
        r"\b(production|prod)\b",
        r"\b(sauvegardes?|backups?|snapshots?|copies? de s[ée]curit[ée]|archives?)\b",
        r"\b(journal|journaux|logs?|piste) d'(audit|acc[èe]s)\b|\baudit\w*\b",
        r"\b(toute la|la totalit[ée] de la|l'int[ée]gralit[ée] de la) (base|table)\b|\b(base de donn[ée]es|table) (enti[èe]re|compl[èe]te)\b",
        r"\b(tout|toutes les donn[ée]es|la totalit[ée])\b(?! de suite)",
    ],
    "NO_HUMAN": [
        r"\bsans (v[ée]rifier|contr[ôo]ler) (l'[ée]ligibilit[ée]|les conditions|si)\b",
        r"\bsans (demander|consulter|pr[ée]venir|v[ée]rifier|confirm\w*|validation|relecture|personne|aucun\w* (humain|personne|validation|contr[ôo]le)|humain|intervention|sauvegarde|pr[ée]avis|rien dire)\b",
        r"\b(automatiquement|discr[èe]tement|en silence|en douce|en cachette|silencieusement|sans bruit|personne (n'a besoin|ne doit))\b",
        r"\baucun(e)? (humain|personne|intervention|validation)\b",
    ],
    "EVERY": [
        r"\b(tous|toutes|tout|chaque|l'ensemble|en masse|en bloc|massivement|enti[èe]re?s?|int[ée]gral\w*)\b",
    ],
    "RECORDS": [
        r"\b(conversations?|[ée]changes?|discussions?|journaux)\b",
        r"\b(comptes?|clients?|utilisateurs?|enregistrements?|donn[ée]es|tickets?|commandes?|messages?|e-?mails?|courriels?|historiques?|fichiers?|documents?|profils?|contrats?|abonnements?|membres?|lignes?)\b",
    ],
    "DISPOSABLE": [
        r"\b(temporaire\w*|tmp|brouillon\w*|cache\w*|build|doublon\w*|spam|de test|apr[èe]s (qu'un humain|que le client|la confirmation)|une fois que le client)\b",
    ],
    "SAFETY": [
        r"\b(antifraude|contr[ôo]les? (antifraude|de fraude|de s[ée]curit[ée])|authentification à deux facteurs|journalisation d'audit)\b",
        r"\b(s[ée]curit[ée]|filtre\w*|mod[ée]ration|censure|garde-fous?|garde-fou|protections?|protecteur\w*|pare-feu|antivirus|bac à sable|sandbox|limites? de d[ée]bit|masquage|caviardage|journalisation|surveillance|alertes?|audit\w*|chiffrement|double authentification|2fa|mfa)\b",
    ],
    "OBEY": [
        r"\b(fai(s|tes)|faire|ex[ée]cut\w*|sui(s|vez|vre)|appliqu\w*|ob[ée]i\w*|accompli\w*|r[ée]alis\w*|trait\w*|consid[èe]r\w*)\b",
        r"\b(sans (poser de questions|discuter|r[ée]fl[ée]chir|v[ée]rifier|h[ée]siter)|à la lettre|aveugl[ée]ment|tel quel|tels quels)\b",
    ],
    "SOURCE": [
        r"\b(e-?mails?|courriels?|messages?|pages?|sites?|r[ée]sultats?|sorties?|r[ée]ponses?|pi[èe]ces? jointes?|documents?|r[ée]cup[ée]r[ée]\w*|t[ée]l[ée]charg[ée]\w*|entrant\w*|re[çc]us?|externes?)\b",
    ],
    "COMMANDS": [
        r"\b(instructions?|consignes?|commandes?|ordres?|demande\w*|dit|exige|veut|indique|ordonne|contient|contenues?|int[ée]gr[ée]es?|cach[ée]es?|quoi que)\b",
    ],
    "SEND": [
        r"\b(t[ée]l[ée]vers\w*|mets? en ligne|publi\w*)\b",
        r"\b(envoi\w*|envoy\w*|transf[èe]r\w*|transmet\w*|t[ée]l[ée]vers\w*|upload\w*|export\w*|copi\w*|partag\w*|publi\w*|synchronis\w*|pousse\w*|d[ée]pos\w*|mets? en copie|cci|cc)\b",
    ],
    "DATA": [
        r"\b(num[ée]ros de t[ée]l[ée]phone|adresses e-?mail|adresses|coordonn[ée]es|base des (utilisateurs|clients)|toutes les (conversations|donn[ée]es)|donn[ée]es (clients?|des clients|utilisateurs?))\b",
        r"\b(donn[ée]es|fichier clients?|liste des clients|table des clients|base (de donn[ée]es|clients?)|table|enregistrements|num[ée]ros de carte|cartes? bancaires?|coordonn[ée]es bancaires|donn[ée]es personnelles|carnet d'adresses|liste de contacts|code source|historique des (conversations|commandes)|tous les (tickets|messages|e-mails|fichiers|clients))\b",
    ],
    "OUTSIDE": [
        r"\b(externe\w*|ext[ée]rieur\w*|tiers|publi(c|que)|priv[ée]e?|personnel\w*|inconnu\w*|gmail|yahoo|hotmail|pastebin|dropbox|webhook\w*|ftp|telegram)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top|fr)\b",
        r"\b(cette|l'|une autre) adresse\b",
    ],
    "REVEAL": [
        r"\b(ajout\w*|communiqu\w*|transmet\w*|transmis|r[ée]ponds avec|cite\w*)\b",
        r"\b(r[ée]p[èe]te\w*|recopie\w*)\b",
        r"\b(r[ée]v[èe]l\w*|affich\w*|montr\w*|imprim\w*|donn\w*|colle\w*|coll\w*|partag\w*|divulgu\w*|d[ée]voil\w*|expos\w*|dis|dites|dire|r[ée]cit\w*|r[ée]p[èe]t\w*|inclu\w*|envoi\w*|envoy\w*|publi\w*|[ée]cri\w*|journalis\w*|copi\w*|lis à voix haute)\b",
    ],
    "SECRET": [
        r"\b(prompt syst[èe]me|instructions? (cach[ée]es|internes|syst[èe]me))\b",
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b(cl[ée]s? (d')?api|cl[ée]s? secr[èe]tes?|cl[ée]s? priv[ée]es?|cl[ée]s? ssh|jetons?( d'acc[èe]s| api)?|tokens?|mots? de passe|identifiants?|secrets?|cha[îi]nes? de connexion|variables? d'environnement|\.env|prompt syst[èe]me|instructions? (syst[èe]me|internes|cach[ée]es))\b",
        r"\b(tes|vos) (instructions|consignes internes|r[èe]gles cach[ée]es)\b",
    ],
    "SECRET_CARE": [
        r"\b(masqu\w*|caviard\w*|remplac\w*|r[ée]voqu\w*|renouvel\w*|coffre\w*|vault|quatre derniers|4 derniers|ast[ée]risques|r[ée]initialis\w*|mot de passe oubli[ée]|si (la|le|un|une) (cl[ée]|jeton|mot de passe)|appara[îi]t|expir[ée]\w*)\b",
    ],
}

NEGATION_BEFORE = r"\b(ne|n'|jamais|aucun\w*|interdit\w*|surtout pas|pas)\b|\bn'"
# "ne colle jamais", "n'accorde pas": the second half of the negation follows the verb
NEGATION_AFTER = r"^\s*(\w+\s+)?(pas|jamais|plus|aucun\w*)\b"
