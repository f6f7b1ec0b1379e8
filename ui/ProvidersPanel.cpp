#include "ProvidersPanel.h"

#include "Confirm.h"
#include "llm/ProviderRegistry.h"
#include "ModelFormat.h"
#include "Money.h"
#include "ProviderDialog.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace {

constexpr int kSortRole = Qt::UserRole + 1;
constexpr int kModelIdRole = Qt::UserRole + 2;

QString errorStyle()
{
    return QStringLiteral("color: #b3261e;");
}

QString okStyle()
{
    return QStringLiteral("color: #1b7e2b;");
}

// zero: what 0 means for this setting.
QString msText(int ms, const QString &zero = ProvidersPanel::tr("off"))
{
    if (ms == 0)
        return zero;
    if (ms % 1000 == 0)
        return ProvidersPanel::tr("%1 s").arg(ms / 1000);
    return ProvidersPanel::tr("%1 ms").arg(ms);
}

QString typeLabel(ProviderType type)
{
    switch (type) {
    case ProviderType::OpenAI:
        return ProvidersPanel::tr("openai");
    case ProviderType::Anthropic:
        return ProvidersPanel::tr("anthropic");
    case ProviderType::Catalog:
        return ProvidersPanel::tr("catalog");
    }
    return {};
}

QString stripConfigPrefix(QString error)
{
    if (error.startsWith(QLatin1String("config: ")))
        error.remove(0, 8);
    return error;
}

QStandardItem *textItem(const QString &text)
{
    auto *item = new QStandardItem(text);
    item->setEditable(false);
    item->setData(text, kSortRole);
    return item;
}

QStandardItem *priceItem(std::optional<qint64> units, bool overridden)
{
    auto *item = new QStandardItem(units ? ModelFormat::credits(*units) : QString());
    item->setEditable(false);
    item->setData(units ? QVariant(*units) : QVariant(qint64(-1)), kSortRole);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (units) {
        item->setToolTip(overridden ? ProvidersPanel::tr("%1 credits per 1M tokens (local override "
                                                         "in use)")
                                          .arg(Money::formatCredits(*units))
                                    : ProvidersPanel::tr("%1 credits per 1M tokens, as listed")
                                          .arg(Money::formatCredits(*units)));
    }
    return item;
}

QString overrideText(const ModelPrice &p)
{
    return ProvidersPanel::tr("in %1 / out %2")
        .arg(ModelFormat::credits(p.input), ModelFormat::credits(p.output));
}

} // namespace

ProvidersPanel::ProvidersPanel(ProviderRegistry *registry, QWidget *parent)
    : QWidget(parent), m_registry(registry)
{
    setObjectName(QStringLiteral("providersPanel"));

    auto *title = new QLabel(tr("<h2>Providers</h2>"), this);
    m_where = new QLabel(this);
    m_where->setObjectName(QStringLiteral("configPathLabel"));
    m_where->setWordWrap(true);
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setObjectName(QStringLiteral("providersTable"));
    m_table->setHorizontalHeaderLabels(
        {tr("Name"), tr("Type"), tr("Base URL"), tr("Upstream keys"), tr("Timeouts")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    m_add = new QPushButton(tr("Add"), this);
    m_add->setObjectName(QStringLiteral("addProviderButton"));
    m_edit = new QPushButton(tr("Edit"), this);
    m_edit->setObjectName(QStringLiteral("editProviderButton"));
    m_remove = new QPushButton(tr("Remove"), this);
    m_remove->setObjectName(QStringLiteral("removeProviderButton"));
    m_test = new QPushButton(tr("Test connection"), this);
    m_test->setObjectName(QStringLiteral("testConnectionButton"));
    m_test->setToolTip(tr("GET BASE/models with the provider's first key, as drafted here."));
    m_save = new QPushButton(tr("Save"), this);
    m_save->setObjectName(QStringLiteral("saveProvidersButton"));
    m_save->setToolTip(tr("Apply to the running gateway and write the config file."));
    m_revert = new QPushButton(tr("Revert"), this);
    m_revert->setObjectName(QStringLiteral("revertProvidersButton"));
    m_revert->setToolTip(tr("Drop the unsaved changes."));

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("providersMessageLabel"));
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->hide();
    m_testResult = new QLabel(this);
    m_testResult->setObjectName(QStringLiteral("testResultLabel"));
    m_testResult->setWordWrap(true);
    m_testResult->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_testResult->hide();

    // The selected catalog provider's live model list and local price overrides.
    m_catalogBox = new QGroupBox(tr("Live catalog"), this);
    m_catalogBox->setObjectName(QStringLiteral("catalogBox"));
    m_catalogStatus = new QLabel(m_catalogBox);
    m_catalogStatus->setObjectName(QStringLiteral("catalogStatusLabel"));
    m_catalogStatus->setWordWrap(true);
    m_refresh = new QPushButton(tr("Refresh catalog"), m_catalogBox);
    m_refresh->setObjectName(QStringLiteral("refreshCatalogButton"));
    m_filter = new QLineEdit(m_catalogBox);
    m_filter->setObjectName(QStringLiteral("catalogFilterEdit"));
    m_filter->setPlaceholderText(tr("Filter models"));
    m_filter->setClearButtonEnabled(true);

    m_catalogModel = new QStandardItemModel(0, CatalogColumnCount, this);
    m_catalogModel->setHorizontalHeaderLabels({tr("Model"), tr("Name"), tr("Input /1M"),
                                               tr("Output /1M"), tr("Cache read /1M"),
                                               tr("Cache write /1M"), tr("Price override")});
    m_catalogProxy = new QSortFilterProxyModel(this);
    m_catalogProxy->setSourceModel(m_catalogModel);
    m_catalogProxy->setSortRole(kSortRole);
    m_catalogProxy->setFilterKeyColumn(-1);
    m_catalogProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_catalogView = new QTableView(m_catalogBox);
    m_catalogView->setObjectName(QStringLiteral("catalogModelsTable"));
    m_catalogView->setModel(m_catalogProxy);
    m_catalogView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_catalogView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_catalogView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_catalogView->setSortingEnabled(true);
    m_catalogView->sortByColumn(ModelIdColumn, Qt::AscendingOrder);
    m_catalogView->setWordWrap(false);
    m_catalogView->verticalHeader()->hide();
    m_catalogView->horizontalHeader()->setStretchLastSection(true);
    m_catalogView->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);

    auto priceEdit = [this](const char *name) {
        auto *edit = new QLineEdit(m_catalogBox);
        edit->setObjectName(QLatin1String(name));
        edit->setPlaceholderText(tr("credits per 1M tokens"));
        return edit;
    };
    m_overrideInput = priceEdit("overrideInputEdit");
    m_overrideOutput = priceEdit("overrideOutputEdit");
    m_overrideCacheRead = priceEdit("overrideCacheReadEdit");
    m_overrideCacheWrite = priceEdit("overrideCacheWriteEdit");
    m_setOverride = new QPushButton(tr("Set override"), m_catalogBox);
    m_setOverride->setObjectName(QStringLiteral("setOverrideButton"));
    m_clearOverride = new QPushButton(tr("Clear override"), m_catalogBox);
    m_clearOverride->setObjectName(QStringLiteral("clearOverrideButton"));
    m_overrideMessage = new QLabel(m_catalogBox);
    m_overrideMessage->setObjectName(QStringLiteral("overrideMessageLabel"));
    m_overrideMessage->setWordWrap(true);

    auto *catalogTop = new QHBoxLayout;
    catalogTop->addWidget(m_catalogStatus, 1);
    catalogTop->addWidget(m_filter);
    catalogTop->addWidget(m_refresh);
    auto *overrideForm = new QFormLayout;
    auto *prices = new QHBoxLayout;
    prices->addWidget(new QLabel(tr("Input:"), m_catalogBox));
    prices->addWidget(m_overrideInput);
    prices->addWidget(new QLabel(tr("Output:"), m_catalogBox));
    prices->addWidget(m_overrideOutput);
    prices->addWidget(new QLabel(tr("Cache read:"), m_catalogBox));
    prices->addWidget(m_overrideCacheRead);
    prices->addWidget(new QLabel(tr("Cache write:"), m_catalogBox));
    prices->addWidget(m_overrideCacheWrite);
    prices->addWidget(m_setOverride);
    prices->addWidget(m_clearOverride);
    overrideForm->addRow(tr("Local price for the selected model:"), prices);
    auto *catalogLayout = new QVBoxLayout(m_catalogBox);
    catalogLayout->addLayout(catalogTop);
    catalogLayout->addWidget(m_catalogView, 1);
    catalogLayout->addLayout(overrideForm);
    catalogLayout->addWidget(m_overrideMessage);

    connect(m_add, &QPushButton::clicked, this, &ProvidersPanel::addProvider);
    connect(m_edit, &QPushButton::clicked, this, &ProvidersPanel::editSelected);
    connect(m_remove, &QPushButton::clicked, this, &ProvidersPanel::removeSelected);
    connect(m_save, &QPushButton::clicked, this, &ProvidersPanel::save);
    connect(m_revert, &QPushButton::clicked, this, &ProvidersPanel::revert);
    connect(m_test, &QPushButton::clicked, this, &ProvidersPanel::testSelected);
    connect(m_refresh, &QPushButton::clicked, this, &ProvidersPanel::refreshSelectedCatalog);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, &ProvidersPanel::editSelected);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        m_overrideMessage->clear();
        fillCatalog();
        updateActions();
    });
    connect(m_filter, &QLineEdit::textChanged, m_catalogProxy,
            &QSortFilterProxyModel::setFilterFixedString);
    connect(m_catalogView->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &ProvidersPanel::updateOverrideForm);
    connect(m_setOverride, &QPushButton::clicked, this, &ProvidersPanel::setOverride);
    connect(m_clearOverride, &QPushButton::clicked, this, &ProvidersPanel::clearOverride);

    // Live lists change on every refresh; the configuration only through apply. A draft with
    // unsaved changes is kept as it is.
    connect(m_registry, &ProviderRegistry::changed, this, [this] {
        if (!m_dirty)
            loadFromRegistry();
        else
            fillCatalog();
    });
    connect(m_registry, &ProviderRegistry::catalogRefreshed, this,
            [this](const QString &provider, int, const QString &error) {
                if (error.isEmpty())
                    m_refreshErrors.remove(provider);
                else
                    m_refreshErrors.insert(provider, error);
                updateCatalogStatus();
            });

    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_add);
    buttons->addWidget(m_edit);
    buttons->addWidget(m_remove);
    buttons->addSpacing(12);
    buttons->addWidget(m_test);
    buttons->addStretch(1);
    buttons->addWidget(m_revert);
    buttons->addWidget(m_save);

    auto *top = new QWidget(this);
    auto *topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addLayout(buttons);
    topLayout->addWidget(m_message);
    topLayout->addWidget(m_table, 1);
    topLayout->addWidget(m_testResult);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(m_catalogBox);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setChildrenCollapsible(false);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(title);
    layout->addWidget(m_where);
    layout->addWidget(split, 1);

    const QString path = m_registry->configPath();
    m_where->setText(path.isEmpty()
                         ? tr("Upstream providers of the model gateway. There is no config file "
                              "(start with --config FILE to keep changes): Save applies them "
                              "until the program quits.")
                         : tr("Upstream providers of the model gateway. Save applies the changes "
                              "at once and writes them to the \"gateway\" section of %1.")
                               .arg(path));
    loadFromRegistry();
    if (m_table->rowCount() > 0)
        m_table->selectRow(0);
}

QString ProvidersPanel::keysSummary(const QStringList &keys)
{
    if (keys.isEmpty())
        return tr("No keys");
    QStringList masked;
    for (const QString &k : keys)
        masked.append(ProviderConfig::maskKey(k));
    const QString list = masked.join(QStringLiteral(", "));
    return keys.size() == 1 ? tr("1 key: %1").arg(list)
                            : tr("%1 keys: %2").arg(keys.size()).arg(list);
}

QString ProvidersPanel::timeoutsSummary(const ProviderConfig &p)
{
    return tr("connect %1, first byte %2, idle %3, total %4, messages %5")
        .arg(msText(p.connectTimeoutMs, tr("default")), msText(p.firstByteTimeoutMs),
             msText(p.idleTimeoutMs), msText(p.totalTimeoutMs), msText(p.messagesTimeoutMs));
}

bool ProvidersPanel::selectProvider(const QString &name)
{
    for (int row = 0; row < m_table->rowCount(); ++row) {
        if (m_table->item(row, NameColumn)->text() == name) {
            m_table->selectRow(row);
            return true;
        }
    }
    return false;
}

QString ProvidersPanel::selectedProvider() const
{
    const QList<QTableWidgetItem *> items = m_table->selectedItems();
    for (const QTableWidgetItem *item : items)
        if (item->column() == NameColumn)
            return item->text();
    return {};
}

ProviderConfig *ProvidersPanel::draftProvider(const QString &name)
{
    for (ProviderConfig &p : m_draft.providers)
        if (p.name == name && !name.isEmpty())
            return &p;
    return nullptr;
}

QStringList ProvidersPanel::namesExcept(const QString &name) const
{
    QStringList names;
    for (const ProviderConfig &p : m_draft.providers)
        if (p.name != name)
            names.append(p.name);
    return names;
}

void ProvidersPanel::loadFromRegistry()
{
    m_draft = m_registry->config();
    m_dirty = false;
    fillTable();
}

void ProvidersPanel::markDirty()
{
    m_dirty = true;
    showMessage(tr("Unsaved changes: Save applies them to the running gateway."), false);
    fillTable();
}

void ProvidersPanel::fillTable()
{
    const QString selected = selectedProvider();
    {
        const QSignalBlocker block(m_table);
        m_table->clearSelection();
        m_table->setRowCount(int(m_draft.providers.size()));
        for (int row = 0; row < m_draft.providers.size(); ++row) {
            const ProviderConfig &p = m_draft.providers.at(row);
            const QString cells[ColumnCount] = {p.name, typeLabel(p.type), p.baseUrl,
                                                keysSummary(p.keys), timeoutsSummary(p)};
            for (int column = 0; column < ColumnCount; ++column) {
                auto *item = new QTableWidgetItem(cells[column]);
                item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
                m_table->setItem(row, column, item);
            }
            m_table->item(row, TimeoutsColumn)
                ->setToolTip(
                    tr("%1\nkey rest %2%3")
                        .arg(timeoutsSummary(p), msText(p.restMs),
                             p.type == ProviderType::Catalog
                                 ? tr(", catalog refresh every %1 min").arg(p.refreshMinutes)
                                 : QString()));
        }
    }
    if (!selected.isEmpty() && !selectProvider(selected) && m_table->rowCount() > 0)
        m_table->selectRow(0);
    fillCatalog();
    updateActions();
}

void ProvidersPanel::fillCatalog()
{
    const QString name = selectedProvider();
    const ProviderConfig *p = draftProvider(name);
    const bool catalog = p && p->type == ProviderType::Catalog;
    m_catalogBox->setVisible(catalog);
    const QString keepModel = selectedModelId();
    m_catalogModel->removeRows(0, m_catalogModel->rowCount());
    if (catalog) {
        m_catalogBox->setTitle(tr("Live catalog of %1 (reached as gateway/%1/MODEL)").arg(name));
        const auto snap = m_registry->snapshot();
        const QHash<QString, CatalogModel> live = snap->live.value(name);
        QStringList ids = live.keys();
        for (auto it = p->priceOverrides.cbegin(); it != p->priceOverrides.cend(); ++it)
            if (!live.contains(it.key()))
                ids.append(it.key());
        ids.sort();
        for (const QString &id : ids) {
            const auto m = live.constFind(id);
            const bool listed = m != live.cend();
            const auto o = p->priceOverrides.constFind(id);
            QList<QStandardItem *> row;
            row.append(textItem(id));
            row.append(textItem(listed ? m->name : tr("(not in the live list)")));
            const bool overridden = listed && m->overridden;
            row.append(
                priceItem(listed ? std::optional(m->price.input) : std::nullopt, overridden));
            row.append(
                priceItem(listed ? std::optional(m->price.output) : std::nullopt, overridden));
            row.append(
                priceItem(listed ? std::optional(m->price.cacheRead) : std::nullopt, overridden));
            row.append(
                priceItem(listed ? std::optional(m->price.cacheWrite) : std::nullopt, overridden));
            row.append(textItem(o != p->priceOverrides.cend() ? overrideText(*o) : QString()));
            row.first()->setData(id, kModelIdRole);
            m_catalogModel->appendRow(row);
        }
        m_catalogView->resizeColumnsToContents();
        if (!keepModel.isEmpty()) {
            const QModelIndexList found =
                m_catalogProxy->match(m_catalogProxy->index(0, ModelIdColumn), kModelIdRole,
                                      keepModel, 1, Qt::MatchExactly);
            if (!found.isEmpty())
                m_catalogView->selectRow(found.first().row());
        }
    }
    updateCatalogStatus();
    updateOverrideForm();
}

void ProvidersPanel::updateCatalogStatus()
{
    const QString name = selectedProvider();
    const ProviderConfig *p = draftProvider(name);
    if (!p || p->type != ProviderType::Catalog)
        return;
    const auto snap = m_registry->snapshot();
    const ProviderConfig *applied = snap->config.provider(name);
    QStringList parts;
    if (!applied || applied->type != ProviderType::Catalog) {
        parts.append(tr("Save first: the running gateway does not have this catalog provider "
                        "yet."));
    } else if (m_refreshing.contains(name)) {
        parts.append(tr("Refreshing..."));
    } else if (!snap->live.contains(name)) {
        parts.append(tr("Not loaded yet."));
    } else {
        const QDateTime fetched = snap->liveFetched.value(name);
        parts.append(tr("%1 models, fetched %2.")
                         .arg(snap->live.value(name).size())
                         .arg(ModelFormat::time(fetched.toLocalTime(), tr("at an unknown time"))));
    }
    if (applied && applied->type == ProviderType::Catalog)
        parts.append(applied->refreshMinutes > 0
                         ? tr("Refreshed every %1 min.").arg(applied->refreshMinutes)
                         : tr("Refreshed only on demand."));
    const QString error = m_refreshErrors.value(name);
    if (!error.isEmpty() && !m_refreshing.contains(name))
        parts.append(tr("Last refresh failed: %1").arg(error));
    m_catalogStatus->setText(parts.join(u' '));
    m_catalogStatus->setStyleSheet(error.isEmpty() ? QString() : errorStyle());
    updateActions();
}

QString ProvidersPanel::selectedModelId() const
{
    const QModelIndexList rows = m_catalogView->selectionModel()->selectedRows(ModelIdColumn);
    return rows.isEmpty() ? QString() : rows.first().data(kModelIdRole).toString();
}

void ProvidersPanel::updateOverrideForm()
{
    const ProviderConfig *p = draftProvider(selectedProvider());
    const QString id = selectedModelId();
    const bool enabled = p && p->type == ProviderType::Catalog && !id.isEmpty();
    for (QLineEdit *edit :
         {m_overrideInput, m_overrideOutput, m_overrideCacheRead, m_overrideCacheWrite})
        edit->setEnabled(enabled);
    m_setOverride->setEnabled(enabled);
    m_clearOverride->setEnabled(enabled && p->priceOverrides.contains(id));
    if (!enabled) {
        for (QLineEdit *edit :
             {m_overrideInput, m_overrideOutput, m_overrideCacheRead, m_overrideCacheWrite})
            edit->clear();
        return;
    }
    // Start from the override, or from the price in use.
    ModelPrice price;
    if (const auto o = p->priceOverrides.constFind(id); o != p->priceOverrides.cend()) {
        price = *o;
    } else {
        const auto live = m_registry->snapshot()->live.value(p->name);
        price = live.value(id).price;
    }
    m_overrideInput->setText(ModelFormat::credits(price.input));
    m_overrideOutput->setText(ModelFormat::credits(price.output));
    m_overrideCacheRead->setText(ModelFormat::credits(price.cacheRead));
    m_overrideCacheWrite->setText(ModelFormat::credits(price.cacheWrite));
}

void ProvidersPanel::setOverride()
{
    ProviderConfig *p = draftProvider(selectedProvider());
    const QString id = selectedModelId();
    if (!p || id.isEmpty())
        return;
    ModelPrice price;
    const struct
    {
        QLineEdit *edit;
        qint64 *target;
        QString label;
        bool required;
    } fields[] = {{m_overrideInput, &price.input, tr("input"), true},
                  {m_overrideOutput, &price.output, tr("output"), true},
                  {m_overrideCacheRead, &price.cacheRead, tr("cache read"), false},
                  {m_overrideCacheWrite, &price.cacheWrite, tr("cache write"), false}};
    for (const auto &f : fields) {
        const QString text = f.edit->text().trimmed();
        if (text.isEmpty() && !f.required) {
            *f.target = 0;
            continue;
        }
        const auto units = Money::parseCredits(text);
        if (!units || *units < 0) {
            m_overrideMessage->setStyleSheet(errorStyle());
            m_overrideMessage->setText(tr("The %1 price must be a non-negative number of credits "
                                          "per 1M tokens with at most 9 decimals, e.g. 0.25.")
                                           .arg(f.label));
            f.edit->setFocus();
            return;
        }
        *f.target = *units;
    }
    p->priceOverrides.insert(id, price);
    m_overrideMessage->setStyleSheet(QString());
    m_overrideMessage->setText(tr("Override for %1 set; Save to apply it.").arg(id));
    markDirty();
}

void ProvidersPanel::clearOverride()
{
    ProviderConfig *p = draftProvider(selectedProvider());
    const QString id = selectedModelId();
    if (!p || !p->priceOverrides.remove(id))
        return;
    m_overrideMessage->setStyleSheet(QString());
    m_overrideMessage->setText(
        tr("Override for %1 cleared; Save to use the listed price again.").arg(id));
    markDirty();
}

void ProvidersPanel::updateActions()
{
    const QString name = selectedProvider();
    const ProviderConfig *p = draftProvider(name);
    m_edit->setEnabled(p != nullptr);
    m_remove->setEnabled(p != nullptr);
    m_test->setEnabled(p != nullptr && !m_testing);
    m_save->setEnabled(m_dirty);
    m_revert->setEnabled(m_dirty);
    const ProviderConfig *applied = p ? m_registry->snapshot()->config.provider(name) : nullptr;
    const bool refreshable =
        p && p->type == ProviderType::Catalog && applied && applied->type == ProviderType::Catalog;
    m_refresh->setEnabled(refreshable && !m_refreshing.contains(name));
}

void ProvidersPanel::showMessage(const QString &text, bool error)
{
    m_message->setText(text);
    m_message->setProperty("error", error);
    m_message->setStyleSheet(error ? errorStyle() : QString());
    m_message->setVisible(!text.isEmpty());
}

void ProvidersPanel::showTestResult(const QString &text, const QString &result)
{
    m_testResult->setText(text);
    m_testResult->setProperty("result", result);
    m_testResult->setStyleSheet(result == u"ok"       ? okStyle()
                                : result == u"failed" ? errorStyle()
                                                      : QString());
    m_testResult->show();
}

void ProvidersPanel::addProvider()
{
    ProviderConfig initial;
    initial.baseUrl = QStringLiteral("https://");
    auto *dialog = new ProviderDialog(initial, namesExcept(QString()), true, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const ProviderConfig p = dialog->provider();
        if (draftProvider(p.name))
            return; // the dialog refuses taken names; the draft cannot have changed meanwhile
        m_draft.providers.append(p);
        markDirty();
        selectProvider(p.name);
    });
    dialog->open();
}

void ProvidersPanel::editSelected()
{
    const QString name = selectedProvider();
    const ProviderConfig *p = draftProvider(name);
    if (!p)
        return;
    auto *dialog = new ProviderDialog(*p, namesExcept(name), false, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog, name] {
        ProviderConfig *target = draftProvider(name);
        if (!target)
            return;
        const ProviderConfig edited = dialog->provider();
        if (edited.name != name && draftProvider(edited.name))
            return;
        *target = edited;
        markDirty();
        selectProvider(edited.name);
    });
    dialog->open();
}

void ProvidersPanel::removeSelected()
{
    const QString name = selectedProvider();
    if (!draftProvider(name))
        return;
    int using_ = 0;
    for (const ModelEntry &m : m_registry->snapshot()->catalog.models())
        if (m.provider == name)
            ++using_;
    QString text = tr("Remove the provider \"%1\" and its upstream keys?").arg(name);
    if (using_ > 0)
        text += QLatin1Char(' ') +
                tr("%1 catalog model(s) are served by it: Save will be refused until they name "
                   "another provider.")
                    .arg(using_);
    confirmThen(this, QStringLiteral("removeProviderConfirmation"), tr("Remove provider"), text,
                tr("Remove"), [this, name] {
                    for (qsizetype i = 0; i < m_draft.providers.size(); ++i) {
                        if (m_draft.providers.at(i).name == name) {
                            m_draft.providers.removeAt(i);
                            markDirty();
                            return;
                        }
                    }
                });
}

void ProvidersPanel::save()
{
    if (!m_dirty)
        return;
    const auto before = m_registry->snapshot();
    const QString path = m_registry->configPath();
    const QString error =
        path.isEmpty() ? m_registry->apply(m_draft) : m_registry->applyAndSave(m_draft);
    const bool applied = m_registry->snapshot() != before;
    if (error.isEmpty()) {
        loadFromRegistry();
        showMessage(path.isEmpty() ? tr("Applied. There is no config file, so the changes last "
                                        "until the program quits.")
                                   : tr("Saved to %1 and applied.").arg(path),
                    false);
        return;
    }
    if (applied) {
        // The gateway runs with it, but the file could not be written.
        loadFromRegistry();
        showMessage(tr("Applied to the running gateway, but not saved: %1").arg(error), true);
        return;
    }
    showMessage(tr("Not saved, nothing changed: %1").arg(stripConfigPrefix(error)), true);
    updateActions();
}

void ProvidersPanel::revert()
{
    loadFromRegistry();
    showMessage(QString(), false);
    m_overrideMessage->clear();
}

void ProvidersPanel::testSelected()
{
    const ProviderConfig *p = draftProvider(selectedProvider());
    if (!p || m_testing)
        return;
    m_testing = true;
    updateActions();
    const QString name = p->name;
    showTestResult(tr("Testing %1: GET %2/models...").arg(name, p->baseUrl),
                   QStringLiteral("running"));
    QPointer<ProvidersPanel> self(this);
    m_registry->testConnection(*p, [self, name](bool ok, const QString &message) {
        if (!self)
            return;
        self->m_testing = false;
        self->showTestResult(ok ? tr("%1: connection OK. %2").arg(name, message)
                                : tr("%1: connection failed. %2").arg(name, message),
                             ok ? QStringLiteral("ok") : QStringLiteral("failed"));
        self->updateActions();
    });
}

void ProvidersPanel::refreshSelectedCatalog()
{
    const QString name = selectedProvider();
    if (name.isEmpty() || m_refreshing.contains(name))
        return;
    m_refreshing.insert(name);
    updateCatalogStatus();
    QPointer<ProvidersPanel> self(this);
    m_registry->refreshCatalog(name, [self, name](const QString &error) {
        if (!self)
            return;
        self->m_refreshing.remove(name);
        if (error.isEmpty())
            self->m_refreshErrors.remove(name);
        else
            self->m_refreshErrors.insert(name, error);
        self->updateCatalogStatus();
    });
}
