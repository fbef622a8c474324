"""A synthetic Chinese -> English grammar for lantern's toy translation model.

Every generated Chinese sentence has exactly one English translation, so exact match is a fair
measure. The grammar is small but makes a translator reorder words the way real Chinese ->
English does:
  - time words move from before the verb to the end:   我昨天买了一本书 -> i bought a book yesterday
  - place phrases (在 ...) move after the object:        我在图书馆看书 -> i read books in the library
  - 的 phrases move after their noun:                    你写的信 -> the letter that you wrote,
                                                         去北京的机票 -> a ticket to beijing
  - questions front an auxiliary (吗) or a wh-word:      你喜欢茶吗 -> do you like tea ?
                                                         你昨天买了什么 -> what did you buy yesterday ?
  - tense comes from 了 / 会 / the time word, agreement from the subject (likes, does, has);
  - one verb translates by its object: 看书 read, 看电影 watch.

    python3 weights/zh_en.py 5        # print five sentence pairs

Tokens: every Chinese character is one token, English is split at spaces (punctuation is
written as its own word). `pairs(n, seed)` is deterministic.
"""
import random
import sys

# ---------------------------------------------------------------------------- lexicon

# people: zh, subject, object, third person singular
PEOPLE = [
    ("我", "i", "me", False), ("你", "you", "you", False), ("他", "he", "him", True),
    ("她", "she", "her", True), ("我们", "we", "us", False), ("他们", "they", "them", False),
    ("李雷", "li lei", "li lei", True), ("韩梅梅", "han meimei", "han meimei", True),
    ("小明", "xiao ming", "xiao ming", True), ("老师", "the teacher", "the teacher", True),
    ("我的朋友", "my friend", "my friend", True), ("我妈妈", "my mother", "my mother", True),
]
POSSESSIVE = {"我": "my", "你": "your", "他": "his", "她": "her", "我们": "our", "他们": "their",
              "李雷": "li lei 's", "韩梅梅": "han meimei 's", "小明": "xiao ming 's",
              "老师": "the teacher 's"}

# countable things: zh, measure word, singular, plural, kind
THINGS = [
    ("书", "本", "book", "books", "text"), ("信", "封", "letter", "letters", "text"),
    ("电影", "部", "movie", "movies", "film"), ("苹果", "个", "apple", "apples", "food"),
    ("机票", "张", "ticket", "tickets", "ticket"), ("房间", "个", "room", "rooms", "room"),
    ("猫", "只", "cat", "cats", "pet"), ("电脑", "台", "computer", "computers", "goods"),
    ("杯子", "个", "cup", "cups", "goods"),
]
# uncountable things: zh, english, kind
STUFF = [
    ("茶", "tea", "drink"), ("咖啡", "coffee", "drink"), ("水", "water", "drink"),
    ("面条", "noodles", "food"), ("中文", "chinese", "subject"), ("英文", "english", "subject"),
    ("数学", "math", "subject"), ("机器学习", "machine learning", "subject"),
    ("音乐", "music", "art"),
]
# adjectives: zh (one character joins the noun directly, longer ones take 的), english
ADJECTIVES = [("新", "new"), ("旧", "old"), ("大", "big"), ("小", "small"),
              ("红色的", "red"), ("有趣的", "interesting"), ("便宜的", "cheap"), ("漂亮的", "beautiful")]
NUMBERS = [("一", 1), ("两", 2), ("三", 3)]
NUMBER_WORDS = {2: "two", 3: "three"}

# verbs: zh, base, third person, past, the kinds of object it takes
# (the english verb may depend on the object: 看 reads text and watches films)
VERBS = [
    ("爱", "love", "loves", "loved", {"person", "drink", "food", "subject", "art", "pet"}),
    ("喜欢", "like", "likes", "liked", {"person", "drink", "food", "subject", "art", "pet", "text", "film", "goods"}),
    ("买", "buy", "buys", "bought", {"text", "food", "ticket", "goods", "pet", "drink"}),
    ("看", "read", "reads", "read", {"text"}),
    ("看", "watch", "watches", "watched", {"film"}),
    ("写", "write", "writes", "wrote", {"text"}),
    ("吃", "eat", "eats", "ate", {"food"}),
    ("喝", "drink", "drinks", "drank", {"drink"}),
    ("学习", "study", "studies", "studied", {"subject"}),
    ("订", "book", "books", "booked", {"ticket", "room"}),
    ("找", "find", "finds", "found", {"person", "text", "ticket", "room", "pet", "goods"}),
    ("帮助", "help", "helps", "helped", {"person"}),
]
# places: zh, "in/at ..." phrase, "go ..." phrase
PLACES = [
    ("北京", "in beijing", "to beijing"), ("上海", "in shanghai", "to shanghai"),
    ("学校", "at school", "to school"), ("家", "at home", "home"),
    ("图书馆", "in the library", "to the library"), ("公园", "in the park", "to the park"),
    ("商店", "at the shop", "to the shop"),
]
# time words: zh, english, the tenses they allow
TIMES = [
    ("昨天", "yesterday", {"past"}), ("上个星期", "last week", {"past"}),
    ("明天", "tomorrow", {"future"}), ("下个星期", "next week", {"future"}),
    ("每天", "every day", {"present"}), ("今天", "today", {"past", "future"}),
    ("晚上", "in the evening", {"present", "past", "future"}),
]

# ---------------------------------------------------------------------------- phrases


def article(word):
    return "an" if word[0] in "aeiou" else "a"


class Gen:
    def __init__(self, rng):
        self.r = rng

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def person(self, exclude=None):
        while True:
            p = self.pick(PEOPLE)
            if p[0] != exclude:
                return p

    def counted(self, thing):
        """一本新书 -> a new book, 两张机票 -> two tickets, 这本书 -> this book."""
        zh, measure, sing, plural, _ = thing
        adj_zh, adj_en = self.pick(ADJECTIVES) if self.r.random() < 0.4 else ("", "")
        det = self.r.random()
        if det < 0.2:
            head, n = ("这", 1) if self.r.random() < 0.5 else ("那", 1)
            en_det = "this" if head == "这" else "that"
            zh_np = head + measure + adj_zh + zh
            return zh_np, " ".join(x for x in [en_det, adj_en, sing] if x)
        num_zh, n = self.pick(NUMBERS)
        zh_np = num_zh + measure + adj_zh + zh
        noun = sing if n == 1 else plural
        first = adj_en or noun
        en_det = article(first) if n == 1 else NUMBER_WORDS[n]
        return zh_np, " ".join(x for x in [en_det, adj_en, noun] if x)

    def obj(self, kinds, allow_clause=True):
        """An object noun phrase of one of `kinds`: (zh, en)."""
        options = []
        if "person" in kinds:
            options.append("person")
        countable = [t for t in THINGS if t[4] in kinds]
        mass = [s for s in STUFF if s[2] in kinds]
        if countable:
            options += ["counted", "counted", "possessed"]
            if allow_clause:
                options.append("clause")
            if any(t[4] == "ticket" for t in countable):
                options.append("ticket_to")
        if mass:
            options += ["mass", "mass"]
        kind = self.pick(options)
        if kind == "person":
            p = self.person()
            return p[0], p[2]
        if kind == "mass":
            s = self.pick(mass)
            return s[0], s[1]
        if kind == "counted":
            return self.counted(self.pick(countable))
        if kind == "possessed":
            owner = self.pick(list(POSSESSIVE))
            t = self.pick(countable)
            return owner + "的" + t[0], POSSESSIVE[owner] + " " + t[2]
        if kind == "ticket_to":
            place = self.pick([p for p in PLACES if p[0] != "家"])
            n_zh, n = self.pick([("一张", 1), ("", 1), ("两张", 2)])
            en = ("two tickets" if n == 2 else "a ticket") + " " + place[2]
            return n_zh + "去" + place[0] + "的机票", en
        # 的 clause: 你写的信 -> the letter that you wrote
        t = self.pick(countable)
        verbs = [v for v in VERBS if t[4] in v[4]]
        v = self.pick(verbs)
        who = self.person()
        return who[0] + v[0] + "的" + t[0], "the " + t[2] + " that " + who[1] + " " + v[3]

    def clause(self, question=None):
        """A full sentence (zh, en). question: None, 'yn' or 'what'."""
        r = self.r
        subj = self.person()
        tense = self.pick(["present", "past", "past", "future"])
        times = [t for t in TIMES if tense in t[2]]
        time = self.pick(times) if r.random() < 0.6 else None
        place = self.pick(PLACES) if r.random() < 0.35 else None
        shape = self.pick(["verb", "verb", "verb", "go", "ask"])
        third = subj[3]

        def verb_forms(v):
            base, s3, past = v[1], v[2], v[3]
            if question:
                aux = {"present": "does" if third else "do", "past": "did", "future": "will"}[tense]
                return aux, base
            if tense == "past":
                return None, past
            if tense == "future":
                return None, "will " + base
            return None, s3 if third else base

        zh_pre = ""  # time, 会 and place before the verb
        if time:
            zh_pre += time[0]
        if tense == "future":
            zh_pre += "会"
        if place and shape != "go":
            zh_pre += "在" + place[0]
        le = "了" if tense == "past" else ""

        if shape == "go":
            dest = self.pick(PLACES)
            aux, vf = verb_forms(("去", "go", "goes", "went"))
            if question == "what":
                zh_v, en_obj = "去" + le + "哪里", None
            elif dest[0] == "家":  # 回家: go home
                zh_v, en_obj = "回" + le + "家", dest[2]
            else:
                zh_v, en_obj = "去" + le + dest[0], dest[2]
            en_rest = [en_obj] if en_obj else []
        elif shape == "ask":
            helper = self.person(exclude=subj[0])
            helped = self.person(exclude=helper[0])
            v = self.pick([x for x in VERBS if x[0] in ("买", "订", "找", "写")])
            kinds = v[4] - {"person"}
            if question == "what":
                o_zh, o_en = "什么", None
            else:
                o_zh, o_en = self.obj(kinds, allow_clause=False)
            aux, vf = verb_forms(("请", "ask", "asks", "asked"))
            zh_v = "请" + helper[0] + "帮" + helped[0] + v[0] + le + o_zh
            en_rest = [helper[2], "to help", helped[2], v[1]] + ([o_en] if o_en else [])
        else:
            v = self.pick(VERBS)
            aux, vf = verb_forms(v)
            if question == "what":
                if v[4] == {"person"} or v[0] == "看":  # 看什么: read or watch?
                    return None
                o_zh, o_en = "什么", None
            else:
                o_zh, o_en = self.obj(v[4])
            zh_v = v[0] + le + o_zh
            en_rest = [o_en] if o_en else []

        tail = []
        if place and shape != "go":
            tail.append(place[1])
        if time:
            tail.append(time[1])
        # the time word may also open the Chinese sentence
        if time and r.random() < 0.3:
            zh = time[0] + subj[0] + zh_pre[len(time[0]):] + zh_v
        else:
            zh = subj[0] + zh_pre + zh_v
        if question == "yn":
            zh += "吗？"
            en = [aux, subj[1], vf] + en_rest + tail + ["?"]
        elif question == "what":
            zh += "？"
            wh = "where" if shape == "go" else "what"
            en = [wh, aux, subj[1], vf] + en_rest + tail + ["?"]
        else:
            en = [subj[1], vf] + en_rest + tail
        return zh, " ".join(en)

    def sentence(self):
        q = self.r.random()
        question = "yn" if q < 0.15 else "what" if q < 0.25 else None
        while True:
            out = self.clause(question)
            if out:
                return out


def pairs(n, seed):
    """n (zh, en) pairs, deterministic for a seed (duplicates possible)."""
    g = Gen(random.Random(seed))
    return [g.sentence() for _ in range(n)]


def zh_tokens(zh):
    return list(zh)


def en_tokens(en):
    return en.split(" ")


if __name__ == "__main__":
    for zh, en in pairs(int(sys.argv[1]) if len(sys.argv) > 1 else 20, 1):
        print(zh, "\t", en)
